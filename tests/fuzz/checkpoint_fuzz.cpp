// libFuzzer target: a checkpoint file's bytes (header, CRCs, then libtorch's pickle of the training
// state) must either decode into a state whose every tensor lies inside its storage or be refused with
// std::invalid_argument, never crash or read out of bounds. The checksums are recomputed over the
// fuzzed payload, as a hostile writer would, so the pickle decoder is reached.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "fitscope/checkpoint/checkpoint_file.hpp"
#include "fitscope/checkpoint/training_state.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string payload(reinterpret_cast<const char*>(data), size);
  try {
    const fitscope::TrainingState s =
        fitscope::decode_state(fitscope::unframe_checkpoint(fitscope::frame_checkpoint(payload), "fuzz"), "fuzz");
    double sum = 0;  // read every element: out of bounds would show under AddressSanitizer
    for (const auto& [name, t] : s.model) sum += t.numel() ? t.to(at::kDouble).sum().item<double>() : 0;
    for (const auto& t : s.optimizer) sum += t.defined() && t.numel() ? t.to(at::kDouble).sum().item<double>() : 0;
    if (sum == 12345.678) return 1;
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
