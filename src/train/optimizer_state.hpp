#pragma once
// Private: the optimizer's per-parameter state as plain tensors, for checkpoints. libtorch keys the
// state by the parameter's TensorImpl (a string of its address in 1.13, the address itself in 2.x);
// the helpers work with both. Layout per parameter: Adam and AdamW 3 tensors (exp_avg, exp_avg_sq,
// max_exp_avg_sq or empty) and its step count; SGD 1 tensor (momentum buffer or empty) and 0;
// count -1 when the parameter has no state yet.

#include <ATen/core/Tensor.h>
#include <torch/optim/optimizer.h>

#include <vector>

#include "fitscope/train/optimizer_kind.hpp"

namespace fitscope::detail {

/// Copies into `tensors` (reusing its buffers when shapes match) and `counts`; `share`: the live state
/// tensors (views of the fused optimizer's buffers) instead of copies.
void copy_optimizer_state(torch::optim::Optimizer& optimizer, OptimizerKind kind, std::vector<at::Tensor>& tensors,
                          std::vector<int64_t>& counts, bool share = false);
/// Throws std::invalid_argument naming the field when `tensors` and `counts` do not fit the optimizer's
/// parameters (counts, and each state tensor's sizes and dtype).
void check_optimizer_state(torch::optim::Optimizer& optimizer, OptimizerKind kind, const std::vector<at::Tensor>& tensors,
                           const std::vector<int64_t>& counts);
/// Replaces the optimizer's state, after check_optimizer_state.
void load_optimizer_state(torch::optim::Optimizer& optimizer, OptimizerKind kind, const std::vector<at::Tensor>& tensors,
                          const std::vector<int64_t>& counts);

/// The libtorch state of parameter `p` of `optimizer`; null when it has none yet.
torch::optim::OptimizerParamState* find_optimizer_state(torch::optim::Optimizer& optimizer, const at::Tensor& p);

/// Copies `from` into `buffer` when the shapes match (no allocation), else makes `buffer` a CPU clone;
/// `share`: `buffer` becomes `from` itself where it is a contiguous CPU tensor.
void copy_into(at::Tensor& buffer, const at::Tensor& from, bool share = false);

}  // namespace fitscope::detail
