// libFuzzer target: the image header checks and the decoders must either accept an image within the
// pixel budget or throw std::invalid_argument naming it, never crash, and never allocate for more
// pixels than the budget (libFuzzer's -malloc_limit_mb catches an allocation above it). The first
// byte picks the channels and a budget; the rest is the file.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "../../src/data/formats/image_codec.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fitscope::detail;
  if (size == 0) return 0;
  const int64_t channels = data[0] % 2 == 0 ? 1 : 3;
  const int64_t budget = (data[0] & 0x80) ? 4096 : 1 << 20;  // at most 3 MiB of pixels
  const std::string_view file(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    const ImageHeader header = read_header(file, "fuzz");
    check_pixel_budget(header, budget, "fuzz");
    if (header.height < 1 || header.width < 1 || header.height * header.width > budget) __builtin_trap();
    (void)has_complete_end(header.format, file.substr(file.size() > 64 ? file.size() - 64 : 0));
  } catch (const std::invalid_argument&) {
  }
  try {
    const Pixels p = decode(file, "fuzz", channels, budget, data[0] % 3 == 0 ? 8 : 0, data[0] % 3 == 0 ? 8 : 0);
    if (p.height * p.width > budget || p.data.size() != static_cast<size_t>(p.height * p.width * channels)) __builtin_trap();
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
