// Seed 003: "why are small batches slower?" The same model and data at batch 16 and 128: the per-step
// fixed cost (data wait, optimizer, framework overhead) is paid 8x as often at batch 16. fitscope's
// own counters show it: samples/s, step time, and the phase shares side by side.
//   ./batch_size_comparison
#include <fitscope/fitscope.hpp>

#include <cstdio>

int main() {
  using namespace fitscope;
  SyntheticOptions data_options;
  data_options.size = 12800;
  const TensorDataset data = make_synthetic(data_options);
  std::vector<SweepRow> rows;
  for (int64_t batch_size : {16, 128}) {
    Trainer trainer{models::Cnn()};
    FitOptions fit;
    fit.loader.batch_size = batch_size;
    fit.steps_per_epoch = 80;
    trainer.fit(data, fit);
    const PhaseStats& s = trainer.measured().stats;
    const Verdict v = judge(s, {batch_size});
    std::printf("batch %3lld: %8.0f samples/s, step p50 %.3f ms; forward %.0f%%, backward %.0f%%, optimizer %.0f%%, "
                "data_wait %.0f%%, other %.0f%% -> %s %s\n",
                static_cast<long long>(batch_size), s.samples_per_s(), s.step().p50_ms, 100 * s.share(Phase::forward),
                100 * s.share(Phase::backward), 100 * s.share(Phase::optimizer), 100 * s.share(Phase::data_wait),
                100 * s.share(Phase::other), v.level.c_str(), v.bound.c_str());
    SweepRow row;
    row.batch_size = batch_size;
    row.samples_per_s = s.samples_per_s();
    row.step_ms_mean = s.step().mean_ms;
    row.step_ms_p50 = s.step().p50_ms;  // what the fit is made on
    rows.push_back(row);
  }
  if (auto fit = fit_step_time(rows)) {
    std::printf("step time ~ %.3f ms per step + %.4f ms per example\n", fit->fixed_ms, fit->per_sample_ms);
  }
}
