#include "fitscope/io/buffered_append.hpp"

namespace fitscope {

void BufferedAppend::operator()(std::string_view data) {
  constexpr std::size_t kLarge = 64u << 10, kBuffer = 1u << 20;
  taken_ += data.size();
  if (data.size() >= kLarge) {
    flush();
    file_.append(data);
    return;
  }
  if (buffer_.size() + data.size() > kBuffer) flush();
  buffer_.append(data);
}

void BufferedAppend::flush() {
  if (buffer_.empty()) return;
  file_.append(buffer_);
  buffer_.clear();
}

}  // namespace fitscope
