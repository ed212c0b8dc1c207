#include "fitscope/train/train_step.hpp"

#include <ATen/record_function.h>

#include <optional>

#include "fitscope/train/fused_optimizer.hpp"
#include "layer_probe.hpp"

namespace fitscope {

void StepContext::backward(const at::Tensor& loss) {
  std::optional<distributed::NoSync> local_only;  // the group's last backward communicates
  if (!update && reducer) local_only.emplace(*reducer);
  detail::LayerProbe::run_backward(loss_scale == 1 ? loss : loss * loss_scale);
}

void StepContext::update_weights() {
  sync_gradients();
  if (before_update) before_update();
  clock.enter(Phase::optimizer);
  if (clipping.enabled()) grad_norm = clip_gradients(model.parameters(), clipping);
  if (optimizer_step) {
    optimizer_step();
  } else {
    optimizer.step();
  }
  clear_gradients(optimizer);
}

StepOutput standard_train_step(const Batch& batch, StepContext& ctx) {
  ctx.clock.enter(Phase::forward);
  at::Tensor outputs = ctx.forward(batch.inputs);
  at::Tensor loss;
  {
    RECORD_USER_SCOPE(detail::kLossScope);  // the layer probe's `loss` row
    loss = compute_loss(ctx.loss, outputs, batch.targets, ctx.loss_options);
  }
  ctx.clock.enter(Phase::backward);
  ctx.backward(loss);
  if (ctx.update) ctx.update_weights();
  // the outputs detached: nothing the step hands back keeps its autograd graph (and the parameters'
  // gradient accumulators, made on this step's stream) alive into the next step
  return {loss.detach(), outputs.detach()};
}

}  // namespace fitscope
