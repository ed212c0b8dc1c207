// "How long does one batch really take?" The first steps pay for allocation and cold caches; fitscope
// leaves them out and reports distributions, not averages. This compares the mean with and without
// warm-up and prints p50/p90/p99 of the step.
//   ./warmup_and_quantiles
#include <fitscope/fitscope.hpp>

#include <cstdio>

int main() {
  using namespace fitscope;
  SyntheticOptions data;
  data.size = 3200;
  for (int64_t warmup : {0, 10}) {
    TrainerOptions options;
    options.warmup_steps = warmup;
    Trainer trainer(models::Cnn(), options);
    FitOptions fit;
    fit.loader.batch_size = 32;
    trainer.fit(make_synthetic(data), fit);
    const Distribution step = trainer.measured().stats.step();
    std::printf("warm-up %2lld steps: mean %.3f ms  p50 %.3f  p90 %.3f  p99 %.3f  max %.3f\n",
                static_cast<long long>(warmup), step.mean_ms, step.p50_ms, step.p90_ms, step.p99_ms,
                step.max_ms);
  }
}
