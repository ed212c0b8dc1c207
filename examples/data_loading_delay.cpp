// Seed 003's slow input pipeline: a loader that takes 10 ms per batch starves a model whose step takes
// far less. The verdict says so (input-bound) and names the knob; the data_wait phase holds the time.
//   ./data_loading_delay
#include <fitscope/fitscope.hpp>

#include <cstdio>

int main() {
  using namespace fitscope;
  SyntheticOptions data_options;
  data_options.size = 3200;
  const TensorDataset data = make_synthetic(data_options);
  for (double delay_ms : {0.0, 10.0}) {
    Trainer trainer{models::Mlp()};
    FitOptions fit;
    fit.load_delay_ms = delay_ms;
    fit.steps_per_epoch = 60;
    trainer.fit(data, fit);
    const Verdict v = judge(trainer.step_stats(), {32});
    std::printf("\n== loader delay %.0f ms per batch\n%s", delay_ms,
                format_breakdown(trainer.step_stats(), v).c_str());
  }
}
