// libFuzzer target: the CIFAR-10 parser must either parse or throw std::invalid_argument, never crash.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "fitscope/data/formats/cifar10_format.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const fitscope::CifarRecords r =
        fitscope::parse_cifar10(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
    if (r.pixels.size() != r.labels.size() * fitscope::kCifarImageBytes) __builtin_trap();
    for (uint8_t label : r.labels) {
      if (label >= 10) __builtin_trap();
    }
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
