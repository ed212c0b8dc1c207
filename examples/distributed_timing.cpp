// distributed_timing: per-replica step times reduced across replicas (seed 001's question).
// Every rank trains its shard; at each epoch end the ranks' step records are gathered, so rank 0
// can print each rank's step p50/p99, its busy time (the step without waiting for gradients) and
// the stragglers. Run: fitscope launch --nproc-per-node 2 -- ./distributed_timing
// (alone, it is a world of one).

#include <torch/torch.h>

#include <iostream>

#include "fitscope/fitscope.hpp"

int main() {
  using namespace fitscope;
  auto context = distributed::context_from_environment();
  TrainerOptions options;
  options.context = context;
  Trainer trainer(models::Cnn(28, 1, 10), options);
  FitOptions fit;
  fit.epochs = 2;
  SyntheticOptions data;
  data.size = 4000;
  trainer.fit(make_synthetic(data), fit);

  if (context->is_chief()) {
    const RunSummary summary = summarize(trainer, fit);
    std::cout << "rank 0 of " << context->world_size() << ", own steps:\n" << format_breakdown(summary)
              << format_ranks(summary);
  }
  return 0;
}
