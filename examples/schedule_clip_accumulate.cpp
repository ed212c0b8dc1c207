// A Lightning-style recipe in C++: AdamW, a cosine learning-rate schedule with linear warm-up, gradient
// clipping by global norm, and gradient accumulation (4 batches of 32 per update, as one of 128).
// Prints the rate and the gradient norm before clipping as the run goes.
//   ./schedule_clip_accumulate
#include <fitscope/fitscope.hpp>

#include <iostream>

int main() {
  using namespace fitscope;
  SyntheticOptions data;
  data.size = 6400;

  TrainerOptions options;
  options.optimizer = OptimizerKind::adamw;  // weight decay 0.01, decoupled
  options.learning_rate = 3e-3;
  options.lr_schedule = cosine_with_warmup(options.learning_rate, /*warmup=*/20);  // to 0 at the fit's end
  options.clipping.max_norm = 1.0;
  options.accumulate = 4;
  Trainer trainer{models::Mlp(), options};

  LambdaCallback::Hooks hooks;
  hooks.on_train_batch_end = [&trainer](int64_t batch, Logs& logs) {
    if (logs.contains("grad_norm") && batch % 40 == 39) {  // grad_norm: on the batches that update
      std::cout << "  batch " << batch + 1 << ": lr " << trainer.context().learning_rate() << ", gradient norm "
                << logs.at("grad_norm") << " (before clipping to at most 1)\n";
    }
  };
  hooks.on_epoch_end = [](int64_t epoch, Logs& logs) {
    std::cout << "epoch " << epoch + 1 << ": loss " << logs.at("loss") << ", val_accuracy " << logs.at("val_accuracy")
              << ", learning_rate " << logs.at("learning_rate") << "\n";
  };
  FitOptions fit;
  fit.epochs = 3;
  fit.validation_split = 0.2;
  fit.callbacks = {std::make_shared<LambdaCallback>(hooks, "PrintRateAndNorm")};
  trainer.fit(make_synthetic(data), fit);
}
