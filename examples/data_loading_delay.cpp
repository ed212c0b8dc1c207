// Seed 003's slow input pipeline, and its fix: a loader that takes 10 ms per batch starves a model
// whose step takes far less when batches are built on the training thread (--workers 0): the verdict
// says input-bound and names the knob, data_wait holds the time. Loader workers sleeping in parallel,
// with batches prefetched ahead of the step, hide most of it.
//   ./data_loading_delay
#include <fitscope/fitscope.hpp>

#include <cstdio>

int main() {
  using namespace fitscope;
  SyntheticOptions data_options;
  data_options.size = 3200;
  const TensorDataset data = make_synthetic(data_options);
  struct Setting {
    double delay_ms;
    int64_t workers;
  };
  for (const Setting s : {Setting{0, 1}, Setting{10, 0}, Setting{10, 8}}) {
    Trainer trainer{models::Cnn()};
    FitOptions fit;
    fit.loader.delay_ms = s.delay_ms;
    fit.loader.workers = s.workers;
    fit.loader.prefetch = 16;
    fit.steps_per_epoch = 60;
    trainer.fit(data, fit);
    std::printf("\n== loader delay %.0f ms per batch, %lld workers (mean prefetch queue depth %.1f)\n%s",
                s.delay_ms, static_cast<long long>(s.workers), trainer.measured().loader.mean_queue_depth,
                format_breakdown(summarize(trainer, fit)).c_str());
  }
}
