// What the layer probe costs at its default (TrainerOptions::layer_probe_every auto, at most 2 % of the
// step time): the seed MLP and the seed CNN each train `steps` steps of batch 32 on one thread, with the
// probe off and on in alternating rounds (the MLP 5 x `steps`, its step being short); the ratio is of the fits' whole step time (FitTime::steps_s,
// the probed steps included), the median over the rounds. Also printed: how often auto probed, what one
// probed step cost, and the layers' shares of forward and backward on the last round. On `cuda` the
// fits run eagerly on the GPU (a replayed CUDA graph has no layers to probe) and the layers' times are
// the device's (CUDA events).
//   ./bench_layer_probe [rounds, default 8] [steps, default 600] [cpu|cuda, default cpu]

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "fitscope/fitscope.hpp"
#include "rounds.hpp"

using namespace fitscope;

namespace {

template <typename Module>
void compare(const char* name, int rounds, int64_t steps, const c10::Device& device) {
  const auto fit_once = [&](int64_t every, LayerTimes* layers) {
    TrainerOptions options;
    options.device = device;
    options.cuda_graph = CudaGraphMode::off;
    options.threads.intra_op = 1;
    options.threads.blas = 1;
    options.layer_probe_every = every;
    options.measure_peak = false;
    Trainer trainer(Module(), options);
    SyntheticOptions data;
    data.size = 32 * steps;
    FitOptions fit;
    fit.loader.batch_size = 32;
    fit.loader.workers = 0;
    trainer.fit(make_synthetic(data), fit);
    if (layers) *layers = trainer.measured().layers;
    return trainer.measured().time.steps_s;
  };
  std::vector<double> ratios;
  LayerTimes last;
  for (int r = 0; r < rounds; ++r) {
    double off, on;
    if (r % 2 == 0) {
      off = fit_once(-1, nullptr);
      on = fit_once(0, &last);
    } else {
      on = fit_once(0, &last);
      off = fit_once(-1, nullptr);
    }
    ratios.push_back(on / off);
  }
  std::printf("%s%s: steps' time probe on / off, median of %d rounds of %lld steps: %.4f (min %.4f, max %.4f); auto probed 1 "
              "step in %lld (%lld steps), each %+.0f %%: %.2f %% expected\n",
              name, last.device_clock ? " (the device's times)" : "", rounds, static_cast<long long>(steps), bench::median(ratios), *std::min_element(ratios.begin(), ratios.end()),
              *std::max_element(ratios.begin(), ratios.end()), static_cast<long long>(last.every),
              static_cast<long long>(last.probed_steps), last.probe_cost * 100, last.run_cost() * 100);
  const double phases = static_cast<double>(last.forward_phase_ns + last.backward_phase_ns);
  for (const LayerTime* l : last.by_time()) {
    std::printf("    %-24s %5.1f %% of forward and backward\n", l->name.c_str(),
                100.0 * static_cast<double>(l->forward_ns + l->backward_ns) / phases);
  }
  std::printf("    %-24s %5.1f %%\n", "(unattributed)",
              100.0 * static_cast<double>(last.unattributed_forward_ns() + last.unattributed_backward_ns()) / phases);
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 8;
  const int64_t steps = argc > 2 ? std::atoll(argv[2]) : 600;
  const c10::Device device(argc > 3 ? argv[3] : "cpu");
  compare<models::Mlp>("seed MLP", rounds, steps * 5, device);  // its step is ~20x shorter than the CNN's
  compare<models::Cnn>("seed CNN", rounds, steps, device);
  return 0;
}
