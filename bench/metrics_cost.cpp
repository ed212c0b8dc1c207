// The metrics phase's share of the step, from fit's own accounting, for metric selections of growing
// cost, on the seed MLP at batch 32 (the smallest step, where the metrics weigh most), in one process
// with alternating rounds (medians). Goal: accuracy + precision + recall <= 5 % of the step.
//   ./bench_metrics_cost [rounds]
#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "fitscope/fitscope.hpp"
#include "rounds.hpp"

using namespace fitscope;

using fitscope::bench::median;

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 9;
  at::set_num_threads(1);
  SyntheticOptions data_options;
  data_options.size = 6400;
  const TensorDataset data = make_synthetic(data_options);
  const std::vector<std::vector<MetricSpec>> selections = {
      {}, {"accuracy"}, {"accuracy", "precision", "recall"}, {"accuracy", "precision", "recall", "f1", "auc"}};
  std::vector<std::unique_ptr<Trainer>> trainers;
  for (const auto& metrics : selections) {
    TrainerOptions options;
    options.metrics = metrics;
    trainers.push_back(std::make_unique<Trainer>(make_model(models::Mlp()), options));
  }
  FitOptions fit;
  fit.loader.batch_size = 32;
  std::vector<std::vector<double>> share(selections.size()), metrics_us(selections.size()), step_us(selections.size());
  for (int r = 0; r < rounds; ++r) {
    for (std::size_t k = 0; k < trainers.size(); ++k) {
      const std::size_t i = r % 2 ? trainers.size() - 1 - k : k;
      trainers[i]->fit(data, fit);
      const PhaseStats& s = trainers[i]->measured().stats;
      share[i].push_back(s.share(Phase::metrics));
      metrics_us[i].push_back(s.phase(Phase::metrics).mean_ms * 1e3);
      step_us[i].push_back(s.step().mean_ms * 1e3);
    }
  }
  std::printf("metrics phase on the seed MLP, batch 32, %d rounds (medians)\n", rounds);
  for (std::size_t i = 0; i < selections.size(); ++i) {
    std::string names = "loss";
    for (const auto& m : selections[i]) names += "+" + m.name();
    std::printf("  %-40s metrics %6.2f us of a %7.2f us step = %5.2f%%%s\n", names.c_str(), median(metrics_us[i]),
                median(step_us[i]), 100 * median(share[i]), i == 2 ? "   (goal <= 5%)" : "");
  }
}
