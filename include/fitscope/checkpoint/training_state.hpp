#pragma once
/// TrainingState: everything that resumes a run exactly: where it stopped (epoch, batch, the loader's
/// pass and position), the global step, the learning rate, the model's parameters and buffers, the
/// optimizer's per-parameter state, libtorch's CPU random generator, and each callback's state (an
/// opaque string from Callback::state()). A value type; the Trainer fills it (reusing its tensors as
/// preallocated buffers) and restores from it. encode/decode use libtorch's pickle format.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace fitscope {

struct TrainingState {
  int64_t epoch = 0;        ///< the epoch to continue
  int64_t batch = 0;        ///< batches of that epoch already done
  int64_t pass = 0;         ///< the loader's pass (differs from epoch with steps_per_epoch)
  int64_t cursor = 0;       ///< batches of that pass already taken
  int64_t global_step = 0;
  double learning_rate = 0;
  std::vector<std::pair<std::string, at::Tensor>> model;  ///< named_state, on the CPU
  std::vector<at::Tensor> optimizer;        ///< per parameter, in order: its state tensors
  std::vector<int64_t> optimizer_counts;    ///< per parameter: step count (Adam), -1 without state
  at::Tensor rng;                           ///< libtorch's default CPU generator state
  std::map<std::string, std::string> callbacks;  ///< callback name -> its state
};

/// The payload of a checkpoint (see checkpoint_file.hpp for the framing).
std::string encode_state(const TrainingState& state);
/// Throws std::invalid_argument naming `name` when the payload is not a training state.
TrainingState decode_state(const std::string& payload, const std::string& name);

}  // namespace fitscope
