// libFuzzer target: the IDX parser must either parse or throw std::invalid_argument, never crash.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "fitscope/data/formats/idx_format.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const fitscope::IdxArray a = fitscope::parse_idx(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
    size_t count = 1;
    for (int64_t d : a.dims) count *= static_cast<size_t>(d);
    if (a.data.size() != count) __builtin_trap();  // the parser's own promise
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
