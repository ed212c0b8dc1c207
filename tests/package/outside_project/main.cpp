// A user's own module and data set, trained through the installed fitscope with Run: the run
// directory `fitscope train` writes, with EarlyStopping and a ModelCheckpoint of the user's.
//   app RUN_DIR
#include <fitscope/fitscope.hpp>
#include <torch/torch.h>

#include <iostream>

struct NetImpl : torch::nn::Module {
  NetImpl() : hidden(register_module("hidden", torch::nn::Linear(8, 16))), out(register_module("out", torch::nn::Linear(16, 3))) {}
  torch::Tensor forward(const torch::Tensor& x) { return out(torch::relu(hidden(x))); }
  torch::nn::Linear hidden, out;
};
TORCH_MODULE(Net);

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: app RUN_DIR\n";
    return 2;
  }
  fitscope::RunOptions run_options;
  run_options.run_dir = argv[1];
  run_options.name = "net";
  run_options.verbose = 2;
  fitscope::Run run(run_options);  // first: building the data and the model is the run's start-up

  torch::manual_seed(0);
  const torch::Tensor x = torch::randn({512, 8});
  const torch::Tensor y = (x.narrow(1, 0, 3).argmax(1)).to(torch::kLong);  // three classes the net can learn
  fitscope::Trainer trainer{Net()};
  fitscope::FitOptions fit;
  fit.epochs = 3;
  fit.validation_split = 0.25;
  fit.loader.batch_size = 32;
  fitscope::EarlyStoppingOptions stop;
  stop.monitor = "val_loss";
  stop.patience = 2;
  fitscope::ModelCheckpointOptions every_epoch;
  every_epoch.filepath = std::string(argv[1]) + "/checkpoints/epoch-{epoch:02d}.fitscope";
  fit.callbacks = {std::make_shared<fitscope::EarlyStopping>(stop), std::make_shared<fitscope::ModelCheckpoint>(every_epoch)};
  const fitscope::RunSummary summary = run.fit(trainer, fitscope::TensorDataset(x, y), fit);
  std::cout << fitscope::format_summary(summary) << "outside project trained: steps=" << summary.steps
            << " val_accuracy=" << summary.logs.at("val_accuracy") << "\n";
  return summary.steps == 36 ? 0 : 1;  // 3 epochs of 384 training examples in batches of 32
}
