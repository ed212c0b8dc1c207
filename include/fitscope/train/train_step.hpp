#pragma once
/// TrainStep: the work of one training step on one batch (forward, loss, backward, and the optimizer
/// on the last batch of an accumulation group). The default is standard_train_step; a user-written
/// step (the "custom training loop") has the same signature, runs inside the same loop and is timed by
/// the same clock: it marks its phases with PhaseTimer on `context.clock` (time it leaves unmarked
/// lands in `other`), and gets accumulation and clipping by calling context.backward() and, when
/// context.update, context.update_weights(). Called on the training thread.

#include <ATen/core/Tensor.h>
#include <torch/optim/optimizer.h>

#include <functional>
#include <optional>

#include "fitscope/data/sources/batch.hpp"
#include "fitscope/distributed/gradient_reducer.hpp"
#include "fitscope/timing/step_clock.hpp"
#include "fitscope/train/gradient_clipping.hpp"
#include "fitscope/train/loss.hpp"
#include "fitscope/train/precision.hpp"
#include "fitscope/models/model.hpp"

namespace fitscope {

/// What a step hands back for the metrics, which only read them (no gradient flows from them).
struct StepOutput {
  at::Tensor loss;     ///< the batch's mean loss (scalar, detached)
  at::Tensor outputs;  ///< the model's outputs for the batch
};

/// What a step may use. References are valid for the duration of the call.
struct StepContext {
  Model& model;
  torch::optim::Optimizer& optimizer;
  Loss loss;
  StepClock& clock;
  LossOptions loss_options{};  ///< TrainerOptions::loss_options
  /// The data-parallel run's gradient reducer; null in a single process. backward() wraps the
  /// micro-batches before the last of a group in distributed::NoSync.
  distributed::GradientReducer* reducer = nullptr;
  /// Gradient accumulation (TrainerOptions::accumulate): whether this batch ends its group, so the
  /// weights are updated after its backward; the others only add their gradients.
  bool update = true;
  /// 1 / the batches in this batch's group: the group's update follows the mean of their losses, as
  /// one batch of all their examples would (a short last group of an epoch is averaged over its own).
  double loss_scale = 1;
  GradientClipping clipping{};  ///< applied by update_weights()
  Precision precision = Precision::float32;  ///< TrainerOptions::precision, applied by forward()
  /// The global gradient norm before clipping, set by update_weights() when clipping is on.
  std::optional<double> grad_norm{};
  /// Replaces optimizer.step() in update_weights(): the captured step's update on device tensors only
  /// (cuda_graph.hpp). Empty = optimizer.step().
  std::function<void()> optimizer_step{};
  /// Called by update_weights() before it changes the weights: the Trainer's wait for a backup still
  /// reading them (TrainingContext::update_after). Empty = none.
  std::function<void()> before_update{};

  /// The model's outputs for `inputs` in the trainer's precision (float32 tensors either way).
  at::Tensor forward(const at::Tensor& inputs) { return forward_in(model, inputs, precision); }
  /// Backward of `loss` times loss_scale, without gradient communication unless `update`. On a step
  /// whose layers are probed it also times the autograd engine's run (the layers' `(autograd engine)`
  /// row, which a custom step's own `loss.backward()` leaves in the unattributed rest).
  void backward(const at::Tensor& loss);

  /// After backward: waits for the gradients averaged across ranks (phase `comm`); nothing in a
  /// single process. A custom step calls it between backward and the optimizer.
  void sync_gradients() {
    if (!reducer) return;
    clock.enter(Phase::comm);
    reducer->finish();
  }
  /// sync_gradients (`comm`), then clipping, the optimizer step and clear_gradients (`optimizer`, left
  /// open: the loop's next phase closes it).
  void update_weights();
};

using TrainStep = std::function<StepOutput(const Batch& batch, StepContext& context)>;

/// forward + loss (phase `forward`), backward (`backward`), and when context.update, update_weights()
/// (`comm`, `optimizer`).
StepOutput standard_train_step(const Batch& batch, StepContext& context);

}  // namespace fitscope
