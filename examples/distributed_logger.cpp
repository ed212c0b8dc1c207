// distributed_logger: callbacks run on the chief with metrics aggregated across workers (seed 001).
// The CSV logger is a chief-only callback: rank 0 writes metrics.csv. Its epoch logs come from the
// metric states summed over every rank's shard, so "accuracy" is the accuracy of the union, not a
// mean of per-rank ratios. EarlyStopping runs on every rank and decides on those same logs, so all
// ranks stop together. Run: fitscope launch --nproc-per-node 2 -- ./distributed_logger [CSV]

#include <torch/torch.h>

#include <iostream>

#include "fitscope/fitscope.hpp"

int main(int argc, char** argv) {
  using namespace fitscope;
  auto context = dist::context_from_environment();
  TrainerOptions options;
  options.context = context;
  Trainer trainer(models::Mlp(28 * 28, 10), options);
  EarlyStoppingOptions stop;
  stop.monitor = "val_loss";
  stop.patience = 1;
  FitOptions fit;
  fit.epochs = 5;
  fit.validation_split = 0.2;
  fit.callbacks = {std::make_shared<CSVLogger>(argc > 1 ? argv[1] : "distributed_metrics.csv"),
                   std::make_shared<EarlyStopping>(stop)};
  SyntheticOptions data;
  data.size = 6000;
  const History history = trainer.fit(make_synthetic(data), fit);
  std::cout << "rank " << context->rank() << ": " << history.epochs().size() << " epochs, val_accuracy "
            << history.last().get("val_accuracy").value_or(0) << "\n";  // the same on every rank
  return 0;
}
