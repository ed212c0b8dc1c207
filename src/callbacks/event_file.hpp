#pragma once
// Private: one TensorBoard event file (events.out.tfevents.<time>.<host>): TFRecord records of Event
// protobufs with scalar summaries, buffered until flush() (at epoch ends, not per batch record).
// Built without libtorch (event_file.cpp and the generated protobuf code form their own object
// library), because PyTorch's wheels bundle protobuf headers of another version that would shadow
// the system's. Not thread-safe.

#include <cstdint>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace fitscope::detail {

class EventFile {
 public:
  /// Creates the file in `dir` (created when missing) and writes the file_version event. Throws
  /// std::runtime_error naming the path when it cannot be written.
  explicit EventFile(const std::string& dir);
  /// One event at `step` holding a simple_value per (tag, value).
  void scalars(int64_t step, const std::vector<std::pair<std::string, double>>& values);
  /// Hands the records written so far to the OS. Throws std::runtime_error naming the path on failure.
  void flush();

 private:
  void write(const std::string& event);
  std::string path_;
  std::ofstream out_;
};

}  // namespace fitscope::detail
