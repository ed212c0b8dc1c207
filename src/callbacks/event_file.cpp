#include "event_file.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <stdexcept>

#include "fitscope/callbacks/tensorboard.hpp"
#include "fitscope/data/formats/tfrecord_format.hpp"
#include "tensorboard_event.pb.h"

namespace fitscope::detail {
namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

EventFile::EventFile(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  char host[256] = "localhost";
  gethostname(host, sizeof host - 1);
  // events.out.tfevents.<time>.<host>.<pid>.<n>, as TensorFlow names them: two writers in one process
  // or two processes never share a file, and an existing file is never reopened
  static std::atomic<uint64_t> counter{0};
  const std::string stem = dir + "/events.out.tfevents." + std::to_string(static_cast<int64_t>(now_s())) + "." + host +
                           "." + std::to_string(::getpid()) + ".";
  do {
    path_ = stem + std::to_string(counter++);
  } while (std::filesystem::exists(path_));
  out_.open(path_, std::ios::binary | std::ios::app);
  if (!out_) throw std::runtime_error("TensorBoard: cannot create " + path_);
  tensorboard::Event first;
  first.set_wall_time(now_s());
  first.set_file_version("brain.Event:2");
  write(first.SerializeAsString());
}

void EventFile::scalars(int64_t step, const std::vector<std::pair<std::string, double>>& values) {
  if (values.empty()) return;
  tensorboard::Event e;
  e.set_wall_time(now_s());
  e.set_step(step);
  for (const auto& [tag, value] : values) {
    auto* v = e.mutable_summary()->add_value();
    v->set_tag(tag);
    v->set_simple_value(static_cast<float>(value));
  }
  write(e.SerializeAsString());
}

void EventFile::write(const std::string& data) {
  write_tfrecord(out_, data);  // TensorBoard reads event files as TFRecord files
  if (!out_) throw std::runtime_error("TensorBoard: cannot write " + path_);
}

void EventFile::flush() {
  out_.flush();
  if (!out_) throw std::runtime_error("TensorBoard: cannot write " + path_);
}

}  // namespace fitscope::detail
