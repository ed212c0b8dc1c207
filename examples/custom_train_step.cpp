// A user-written training step (the "custom training loop" case) with gradient clipping. It plugs into
// the same fit loop and is timed by the same clock: the phases it marks show up in the breakdown.
//   ./custom_train_step
#include <fitscope/fitscope.hpp>
#include <torch/nn/utils/clip_grad.h>

#include <iostream>

int main() {
  using namespace fitscope;
  TrainerOptions options;
  options.train_step = [](const Batch& batch, StepContext& ctx) {
    at::Tensor outputs, loss;
    {
      PhaseTimer t(ctx.clock, Phase::forward);
      outputs = ctx.model.forward(batch.inputs);
      loss = compute_loss(ctx.loss, outputs, batch.targets);
    }
    {
      PhaseTimer t(ctx.clock, Phase::backward);
      loss.backward();
    }
    {
      PhaseTimer t(ctx.clock, Phase::optimizer);
      torch::nn::utils::clip_grad_norm_(ctx.model.parameters(), 1.0);
      ctx.optimizer.step();
      ctx.optimizer.zero_grad();
    }
    return StepOutput{loss.detach(), outputs.detach()};
  };
  Trainer trainer(models::Mlp(), options);
  SyntheticOptions data;
  data.size = 4000;
  FitOptions fit;
  fit.epochs = 2;
  fit.validation_split = 0.2;
  fit.callbacks = {std::make_shared<ProgressBar>()};
  trainer.fit(make_synthetic(data), fit);
  std::cout << format_breakdown(summarize(trainer, fit));
}
