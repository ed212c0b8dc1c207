// The data pipeline's two goals, measured side by side in one process (ratios, never absolute times):
//  1. Seed 003 fixed: a loader delay about equal to the step time, hidden by workers and prefetch, keeps
//     >= 0.97 of the no-delay throughput with a data_wait share <= 2 %; the same delay with 0 workers
//     shows the full stall.
//  2. In-memory batching of the seed MLP at batch 32 costs <= 5 % of the step (its data_wait share),
//     with the default one worker; with 0 workers the gather runs on the training thread, for contrast.
//   ./bench_data_pipeline [rounds=3]
#include <fitscope/fitscope.hpp>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "rounds.hpp"

using namespace fitscope;

namespace {

struct Result {
  double samples_per_s;
  double data_wait_share;
  double step_p50_ms;
  double queue_depth;
};

template <typename Module>
Result run(const std::shared_ptr<const TensorDataset>& data, Module module, int64_t workers, double delay_ms,
           int64_t steps) {
  Trainer trainer{module};
  FitOptions fit;
  fit.loader.workers = workers;
  fit.loader.prefetch = 8;
  fit.loader.delay_ms = delay_ms;
  fit.steps_per_epoch = steps;
  trainer.fit(data, fit);
  const PhaseStats& s = trainer.measured().stats;
  return {s.samples_per_s(), s.share(Phase::data_wait), s.step().p50_ms, trainer.measured().loader.mean_queue_depth};
}

void print(const char* name, const std::vector<Result>& rounds, double baseline) {
  std::vector<double> speed, share, depth;
  for (const Result& r : rounds) {
    speed.push_back(r.samples_per_s);
    share.push_back(r.data_wait_share);
    depth.push_back(r.queue_depth);
  }
  const double s = bench::median(speed);
  std::printf("  %-34s %9.0f samples/s  x%.3f of no delay  data_wait %5.1f%%  queue depth %.1f\n", name, s,
              baseline > 0 ? s / baseline : 1.0, 100 * bench::median(share), bench::median(depth));
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 3;
  const bool only_mlp = argc > 2 && std::string(argv[2]) == "mlp";
  SyntheticOptions options;
  options.size = 20000;
  const auto data = std::make_shared<const TensorDataset>(make_synthetic(options));

  // 1. The seed CNN; the delay is set to its measured step time (after an untimed run).
  run(data, models::Cnn(), 1, 0, 60);
  const double step_ms = run(data, models::Cnn(), 1, 0, 100).step_p50_ms;
  std::printf("1. Seed CNN, batch 32, step p50 %.2f ms; loader delay %.2f ms per batch (= the step)\n", step_ms, step_ms);
  std::vector<Result> plain, hidden, stalled;
  for (int r = 0; r < rounds && !only_mlp; ++r) {  // interleaved, so drifts of the machine hit every configuration alike
    plain.push_back(run(data, models::Cnn(), 1, 0, 150));
    hidden.push_back(run(data, models::Cnn(), 2, step_ms, 150));
    stalled.push_back(run(data, models::Cnn(), 0, step_ms, 150));
  }
  std::vector<double> plain_speed;
  for (const Result& r : plain) plain_speed.push_back(r.samples_per_s);
  const double baseline = bench::median(plain_speed);
  print("no delay, 1 worker", plain, baseline);
  print("delay, 2 workers, prefetch 8", hidden, baseline);
  print("delay, 0 workers (training thread)", stalled, baseline);
  std::printf("   goal: delay hidden >= 0.97 of no delay with data_wait <= 2%%\n\n");

  // 2. The seed MLP: in-memory batching against its (tiny) step.
  std::printf("2. Seed MLP, batch 32, in-memory data: the batching cost is the data_wait share\n");
  std::vector<Result> one_worker, inline_gather;
  for (int r = 0; r < rounds; ++r) {
    one_worker.push_back(run(data, models::Mlp(), 1, 0, 600));
    inline_gather.push_back(run(data, models::Mlp(), 0, 0, 600));
  }
  std::vector<double> speed;
  for (const Result& r : one_worker) speed.push_back(r.samples_per_s);
  const double mlp_baseline = bench::median(speed);
  print("1 worker (default)", one_worker, mlp_baseline);
  print("0 workers (gather on the step)", inline_gather, mlp_baseline);
  std::printf("   goal: batching <= 5%% of the step\n");
}
