// distributed_logger: callbacks run on the chief with metrics aggregated across workers (seed 001).
// Run writes the run directory on the chief (rank 0) alone: metrics.csv, whose epoch logs come from
// the metric states summed over every rank's shard (so "accuracy" is the accuracy of the union, not a
// mean of per-rank ratios), and summary.json with every rank's step times. EarlyStopping runs on
// every rank and decides on those same logs, so all ranks stop together.
// Run: fitscope launch --nproc-per-node 2 -- ./distributed_logger [RUN_DIR]

#include <iostream>

#include "fitscope/fitscope.hpp"

int main(int argc, char** argv) {
  using namespace fitscope;
  RunOptions run_options;
  run_options.run_dir = argc > 1 ? argv[1] : "runs/distributed_logger";
  run_options.name = "mlp";
  run_options.verbose = 2;
  Run run(run_options);
  TrainerOptions options;
  options.context = distributed::context_from_environment();
  Trainer trainer(models::Mlp(28 * 28, 10), options);
  EarlyStoppingOptions stop;
  stop.monitor = "val_loss";
  stop.patience = 1;
  FitOptions fit;
  fit.epochs = 5;
  fit.validation_split = 0.2;
  fit.callbacks = {std::make_shared<EarlyStopping>(stop)};
  SyntheticOptions data;
  data.size = 6000;
  const RunSummary summary = run.fit(trainer, make_synthetic(data), fit);
  std::cout << "rank " << trainer.options().context->rank() << ": " << run.history().epochs().size() << " epochs, val_accuracy "
            << run.history().last().get("val_accuracy").value_or(0) << "\n";  // the same on every rank
  if (trainer.context().is_chief()) std::cout << format_ranks(summary) << "Run directory: " << run.directory() << "\n";
  return 0;
}
