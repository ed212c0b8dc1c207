#pragma once
/// BufferedAppend: appends to a file through a buffer: small pieces (a serializer's headers) gathered
/// into writes of up to 1 MiB, large ones (a tensor's bytes) written as they are, never copied. A
/// ByteSink (std::ref of it); flush() before the file is synced.

#include <cstdint>
#include <string>
#include <string_view>

#include "fitscope/io/file_system.hpp"

namespace fitscope {

class BufferedAppend {
 public:
  explicit BufferedAppend(WritableFile& file) : file_(file) {}
  void operator()(std::string_view data);
  void flush();
  uint64_t taken() const { return taken_; }  ///< bytes given so far

 private:
  WritableFile& file_;
  std::string buffer_;
  uint64_t taken_ = 0;
};

}  // namespace fitscope
