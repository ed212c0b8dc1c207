#include "fitscope/train/train_step.hpp"

namespace fitscope {

StepOutput standard_train_step(const Batch& batch, StepContext& ctx) {
  ctx.clock.enter(Phase::forward);
  at::Tensor outputs = ctx.model.forward(batch.inputs);
  at::Tensor loss = compute_loss(ctx.loss, outputs, batch.targets);
  ctx.clock.enter(Phase::backward);
  loss.backward();
  ctx.sync_gradients();
  ctx.clock.enter(Phase::optimizer);
  ctx.optimizer.step();
  ctx.optimizer.zero_grad();
  // metrics only read the outputs (argmax, comparisons), which records nothing: no detach needed
  return {loss.detach(), std::move(outputs)};
}

}  // namespace fitscope
