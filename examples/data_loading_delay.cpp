// Seed 003's slow input pipeline, and its fix: a loader that takes 10 ms per batch starves a model
// whose step takes far less when batches are built on the training thread (--workers 0): the verdict
// says input-bound and names the knob, data_wait holds the time. Loader workers sleeping in parallel,
// with batches prefetched ahead of the step, hide most of it: 8 chosen by hand, or as many as
// LoaderOptions::kAuto finds while the epoch goes on (the CLI's default, --workers auto), which
// prints what it measured and changed.
//   ./data_loading_delay
#include <fitscope/fitscope.hpp>

#include <cstdio>

int main() {
  using namespace fitscope;
  SyntheticOptions data_options;
  data_options.size = 6400;
  const TensorDataset data = make_synthetic(data_options);
  constexpr int64_t kAuto = LoaderOptions::kAuto;
  struct Setting {
    double delay_ms;
    int64_t workers, prefetch;
  };
  for (const Setting s : {Setting{0, 1, 8}, Setting{10, 0, 8}, Setting{10, 8, 16}, Setting{10, kAuto, kAuto}}) {
    Trainer trainer{models::Cnn()};
    FitOptions fit;
    fit.loader.delay_ms = s.delay_ms;
    fit.loader.workers = s.workers;
    fit.loader.prefetch = s.prefetch;
    fit.steps_per_epoch = 300;
    trainer.fit(data, fit);
    const LoaderStats& loader = trainer.measured().loader;
    std::printf("\n== loader delay %.0f ms per batch, workers %s: %lld at the end (mean prefetch queue depth %.1f of %lld)\n",
                s.delay_ms, s.workers == kAuto ? "auto" : std::to_string(s.workers).c_str(),
                static_cast<long long>(loader.workers), loader.mean_queue_depth, static_cast<long long>(loader.prefetch));
    for (const LoaderChange& c : loader.changes) std::printf("   %5.2f s  %s\n", c.at_s, c.why.c_str());
    std::printf("%s", format_breakdown(summarize(trainer, fit)).c_str());
  }
}
