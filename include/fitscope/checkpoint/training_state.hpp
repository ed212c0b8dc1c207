#pragma once
/// TrainingState: everything that resumes a run exactly: where it stopped (epoch, batch, the loader's
/// pass and position), the global step, the learning rate, the model's parameters and buffers, the
/// optimizer's per-parameter state, libtorch's CPU random generator, and each callback's state (an
/// opaque string from Callback::state()). A value type; the Trainer fills it (reusing its tensors as
/// preallocated buffers) and restores from it. encode/decode use libtorch's pickle format; decode
/// trusts nothing the file declares (see decode_state).

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "fitscope/io/file_system.hpp"

namespace fitscope {

struct TrainingState {
  int64_t epoch = 0;        ///< the epoch to continue
  int64_t batch = 0;        ///< batches of that epoch already done
  int64_t pass = 0;         ///< the loader's pass (differs from epoch with steps_per_epoch)
  int64_t cursor = 0;       ///< batches of that pass already taken
  /// Examples of that pass the job's ranks have taken together: positions of its seeded order, so that
  /// another number of ranks can split the rest anew (DistributedSampler::indices_after); -1 = not
  /// recorded (a file of an older fitscope: cursor x batch_size x world_size).
  int64_t pass_examples = -1;
  /// For a stream, the ranks whose streams order that pass (their draws interleaved:
  /// StreamDataset::rest_of_pass): world_size, unless the pass was resumed on another number of ranks;
  /// 0 = not recorded (world_size).
  int64_t pass_ranks = 0;
  int64_t global_step = 0;
  double learning_rate = 0;
  std::vector<std::pair<std::string, at::Tensor>> model;  ///< named_state, on the CPU
  std::vector<at::Tensor> optimizer;        ///< per parameter, in order: its state tensors
  std::vector<int64_t> optimizer_counts;    ///< per parameter: step count (Adam), -1 without state
  at::Tensor rng;                           ///< libtorch's default CPU generator state
  std::map<std::string, std::string> callbacks;  ///< callback name -> its state
  std::vector<at::Tensor> metrics;          ///< the epoch's training metric states so far (one process)
  /// For a stream (StreamDataset), the training loader's Loader::stream_position at (pass, cursor), one
  /// process's; empty otherwise, or with several ranks (each reads its records again to resume).
  std::string stream_position;
  // what the run was, to refuse a resume that differs (0 or empty: a file of an older fitscope)
  int64_t batch_size = 0;
  int64_t world_size = 0;
  std::string optimizer_kind;  ///< "adam", "adamw", "sgd"
};

/// The payload of a checkpoint (see checkpoint_file.hpp for the framing).
std::string encode_state(const TrainingState& state);
/// The same payload streamed into `out`, each tensor's bytes from its own storage.
void encode_state(const TrainingState& state, const ByteSink& out);
/// Throws std::invalid_argument naming `name` and the field when the payload is not a training state,
/// before any tensor's data is read: every tensor must be a dense CPU tensor of a plain dtype whose
/// sizes, strides and storage offset stay inside its storage; the counts must agree; epoch, batch,
/// pass, cursor and global step must be >= 0, the learning rate finite and >= 0.
TrainingState decode_state(const std::string& payload, const std::string& name);

/// Throws std::invalid_argument naming `field` when `t` is not a dense CPU tensor of a plain dtype
/// lying inside its storage (what decode_state checks of each tensor).
void check_tensor_in_bounds(const at::Tensor& t, const std::string& field);

}  // namespace fitscope
