// The smallest useful callback: print the epoch logs and stop once validation accuracy is high enough.
//   ./minimal_callback
#include <fitscope/fitscope.hpp>

#include <iostream>

int main() {
  using namespace fitscope;
  SyntheticOptions data;
  data.size = 4000;
  Trainer trainer{models::Cnn()};

  LambdaCallback::Hooks hooks;
  hooks.on_epoch_end = [&trainer](int64_t epoch, Logs& logs) {
    std::cout << "epoch " << epoch << ": loss " << logs.at("loss") << ", val_accuracy "
              << logs.at("val_accuracy") << "\n";
    if (logs.at("val_accuracy") >= 0.9) trainer.context().request_stop();  // Keras: model.stop_training = True
  };
  hooks.on_train_batch_end = [](int64_t batch, Logs& logs) {
    if (batch % 50 == 0) std::cout << "  batch " << batch << " running loss " << logs.at("loss") << "\n";
  };

  FitOptions fit;
  fit.epochs = 10;
  fit.validation_split = 0.2;
  fit.callbacks = {std::make_shared<LambdaCallback>(hooks, "PrintAndStop")};
  const History history = trainer.fit(make_synthetic(data), fit);
  std::cout << "stopped after " << history.epochs().size() << " epoch(s)\n";
}
