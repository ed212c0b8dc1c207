#pragma once
/// FusedOptimizer: libtorch's Adam, AdamW and SGD rules (momentum, dampening, Nesterov, weight decay,
/// AMSGrad) for float32 parameters on the CPU, each step one pass over each parameter in plain
/// vectorized C++ instead of a dozen dispatched tensor ops per parameter. The Trainer uses it wherever
/// it can (TrainerOptions::fused_optimizer); it is a torch::optim::Optimizer, so learning rates are
/// read and set through param_groups() as for libtorch's own.
///
/// Its contract:
/// - The same rule as torch::optim's optimizer of the same options, in the same float32 operations in
///   the same order (the results agree to rounding; a test compares 200 steps), and deterministic:
///   the same state and gradients give bit-identical weights.
/// - A parameter whose gradient is undefined is skipped, as by torch::optim.
/// - The state (first and second moments, AMSGrad's maximum, momentum buffers) lives in flat buffers,
///   one per kind, each parameter a range of them, in param_groups() order. copy_state and load_state
///   use the checkpoint's layout (checkpoint/training_state.hpp): a state written by the fused step
///   resumes libtorch's and the other way round.
/// - The instruction set is chosen when the program starts (AVX2 where the CPU has it, else the
///   baseline), never by the machine that compiled it.

#include <ATen/core/Tensor.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/optimizer.h>
#include <torch/optim/sgd.h>

#include <cstdint>
#include <vector>

#include "fitscope/train/optimizer_kind.hpp"

namespace fitscope {

class FusedOptimizer : public torch::optim::Optimizer {
 public:
  /// Whether every tensor of `params` is one the fused step updates: float32, dense and contiguous, on
  /// the CPU.
  static bool supports(const std::vector<at::Tensor>& params);

  /// Throws std::invalid_argument for parameters it does not support (naming the first).
  FusedOptimizer(const std::vector<at::Tensor>& params, const torch::optim::AdamOptions& options);
  FusedOptimizer(const std::vector<at::Tensor>& params, const torch::optim::AdamWOptions& options);
  FusedOptimizer(const std::vector<at::Tensor>& params, const torch::optim::SGDOptions& options);

  /// One update of every parameter with a gradient; `closure`, when given, is called first (with
  /// gradients enabled) and its loss returned.
  at::Tensor step(LossClosure closure = nullptr) override;
  OptimizerKind kind() const { return kind_; }

  /// The state per parameter, in the checkpoint's layout: Adam and AdamW 3 tensors (exp_avg,
  /// exp_avg_sq, max_exp_avg_sq or empty) and the step count; SGD 1 (the momentum buffer or empty) and
  /// 0; -1 and empty tensors for a parameter not yet stepped. Copies into `tensors`' buffers when their
  /// shapes fit; `share`: views of the flat buffers instead (valid while this optimizer lives and
  /// steps no more).
  void copy_state(std::vector<at::Tensor>& tensors, std::vector<int64_t>& counts, bool share = false);
  /// Replaces the state with one in copy_state's layout. Throws std::invalid_argument naming the entry
  /// that does not fit (checked before anything changes).
  void load_state(const std::vector<at::Tensor>& tensors, const std::vector<int64_t>& counts);

  /// torch::serialize of this optimizer would lose its state: refused (std::logic_error); checkpoints
  /// (Trainer::capture_state) keep it.
  void save(torch::serialize::OutputArchive& archive) const override;
  void load(torch::serialize::InputArchive& archive) override;

 private:
  struct Slot {
    const c10::TensorImpl* param = nullptr;
    int64_t offset = 0;  // into the flat buffers
    int64_t numel = 0;
    int64_t steps = -1;  // Adam's step count; -1 = no state yet (SGD: 0 once it has a momentum buffer)
  };
  FusedOptimizer(const std::vector<at::Tensor>& params, std::unique_ptr<torch::optim::OptimizerOptions> defaults,
                 OptimizerKind kind);
  /// Lays the slots out again, keeping each parameter's state.
  void lay_out();
  /// lay_out() when the parameters changed since (add_param_group, a group's parameter replaced).
  void lay_out_if_changed();
  void step_adam(at::Tensor& param, const at::Tensor& grad, Slot& slot, const torch::optim::OptimizerOptions& options);
  void step_sgd(at::Tensor& param, const at::Tensor& grad, Slot& slot, const torch::optim::SGDOptions& options);

  OptimizerKind kind_;
  std::vector<Slot> slots_;
  std::vector<float> first_;   // exp_avg, or SGD's momentum buffer
  std::vector<float> second_;  // exp_avg_sq
  std::vector<float> max_second_;  // AMSGrad's max_exp_avg_sq; allocated by its first step
  std::vector<char> has_max_;      // per slot: whether max_second_ holds its maximum
};

/// Sets the gradient of every parameter of `optimizer` to none (PyTorch 2's zero_grad): no op per
/// parameter, and the next backward hands its gradient over without a fill or an add. The Trainer clears
/// gradients so after each update, whichever optimizer it runs.
void clear_gradients(torch::optim::Optimizer& optimizer);

}  // namespace fitscope
