#pragma once
/// TrainStep: the work of one optimisation step on one batch (forward, loss, backward, optimizer).
/// The default is standard_train_step; a user-written step (the "custom training loop") has the same
/// signature, runs inside the same loop and is timed by the same clock: it marks its phases with
/// PhaseTimer on `context.clock` (time it leaves unmarked lands in `other`).
/// Called on the training thread.

#include <ATen/core/Tensor.h>
#include <torch/optim/optimizer.h>

#include <functional>

#include "fitscope/data/batch.hpp"
#include "fitscope/distributed/gradient_reducer.hpp"
#include "fitscope/timing/step_clock.hpp"
#include "fitscope/train/loss.hpp"
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
  /// The data-parallel run's gradient reducer; null in a single process. Wrap micro-batches in
  /// dist::NoSync for gradient accumulation.
  dist::GradientReducer* reducer = nullptr;

  /// After backward: waits for the gradients averaged across ranks (phase `comm`); nothing in a
  /// single process. A custom step calls it between backward and the optimizer.
  void sync_gradients() {
    if (!reducer) return;
    clock.enter(Phase::comm);
    reducer->finish();
  }
};

using TrainStep = std::function<StepOutput(const Batch& batch, StepContext& context)>;

/// forward + loss (phase `forward`), backward (`backward`), sync_gradients (`comm`), optimizer step and zero_grad (`optimizer`,
/// left open: the loop's next phase closes it).
StepOutput standard_train_step(const Batch& batch, StepContext& context);

}  // namespace fitscope
