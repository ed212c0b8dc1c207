#pragma once
// Private: the optimizer kinds as a table, one entry per OptimizerKind: its name, how the Trainer builds
// it, and the layout of its per-parameter state in a checkpoint (optimizer_state.hpp). A new kind is a
// new entry; a kind the table does not hold is refused by name, never read through another's entry.

#include <ATen/core/Tensor.h>
#include <torch/optim/optimizer.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "fitscope/train/optimizer_kind.hpp"
#include "param_update.hpp"

namespace fitscope {
struct TrainerOptions;
}

namespace fitscope::detail {

/// A state tensor moved to where its parameter lives (an empty one stays empty).
using ToParameter = std::function<at::Tensor(const at::Tensor&)>;

struct OptimizerKindEntry {
  OptimizerKind kind;
  const char* name;  ///< as on the command line and in config.toml
  /// libtorch's optimizer of `options` over `params`, or the FusedOptimizer of the same rule when `fused`
  std::unique_ptr<torch::optim::Optimizer> (*make)(const std::vector<at::Tensor>& params, const TrainerOptions& options,
                                                   bool fused);
  std::size_t state_tensors;     ///< state tensors per parameter in a checkpoint
  std::size_t required_tensors;  ///< of those, the first ones every parameter with state has
  /// Copies a parameter's libtorch state into `slot` (state_tensors tensors, buffers reused; `share`:
  /// the state's own tensors) and its step count; throws std::invalid_argument when `state` is another kind's.
  void (*copy_state)(torch::optim::OptimizerParamState& state, at::Tensor* slot, int64_t& count, bool share);
  /// The libtorch state of `slot` and `count`.
  std::unique_ptr<torch::optim::OptimizerParamState> (*make_state)(const at::Tensor* slot, int64_t count,
                                                                   const ToParameter& to_parameter);
  /// The update of `param` (group options `options`, libtorch state `state` or null) as device tensor
  /// ops for a captured step (param_update.hpp); throws std::invalid_argument with the reason where it
  /// cannot be (a state libtorch makes on the first step is not there yet, amsgrad).
  std::unique_ptr<ParamUpdate> (*capturable)(torch::optim::OptimizerOptions& options,
                                             torch::optim::OptimizerParamState* state, const at::Tensor& param);
};

/// Every kind, in OptimizerKind's order.
const std::vector<OptimizerKindEntry>& optimizer_kinds();
/// The entry of `kind`; throws std::invalid_argument naming the value and the kinds there are.
const OptimizerKindEntry& optimizer_kind_entry(OptimizerKind kind);

}  // namespace fitscope::detail
