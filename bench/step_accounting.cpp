// The cost of the accounting itself, and the stall a slow callback causes, measured side by side in one
// process with alternating rounds (medians of per-round ratios):
//   1. timers on vs off (goal: ratio <= 1.002): the accounting's own cost per step, timed in a tight
//      loop, over the mean step; and fit() with the clock on vs off in alternating rounds, next to
//      off vs off, which shows how much of that difference this machine's noise alone makes;
//   2. a sync 20 ms callback on every on_train_batch_end vs no callback, seed MLP at batch 32
//      (shows the stall: >= 1.5x slower), and the same callback async (the queue fills: the callback
//      is slower than the step, so async cannot hide it, only log less often can).
//   ./bench_step_accounting [rounds]
#include <ATen/Parallel.h>
#include <torch/utils.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "fitscope/fitscope.hpp"
#include "rounds.hpp"

using namespace fitscope;
using Clock = std::chrono::steady_clock;

using fitscope::bench::paired_ratio;

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 21;
  at::set_num_threads(1);
  SyntheticOptions data_options;
  data_options.size = 6400;
  const TensorDataset data = make_synthetic(data_options);

  TrainerOptions quiet;
  quiet.warn = [](const std::string&) {};
  // the accounting's own cost per step, in a tight loop: the clock reads of a step as fit makes them
  // (begin, data_wait, leave, forward, backward, optimizer, metrics, end) and folding the record in
  double accounting_ns = 0;
  {
    StepClock clock;
    PhaseStats stats(0);
    constexpr int kSteps = 200000;
    const auto start = Clock::now();
    for (int i = 0; i < kSteps; ++i) {
      clock.begin_step(0, i, Phase::data_wait);
      clock.leave();
      for (Phase p : {Phase::forward, Phase::backward, Phase::optimizer, Phase::metrics}) clock.enter(p);
      stats.add(clock.end_step());
    }
    accounting_ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count() / kSteps;
  }
  for (const char* name : {"mlp", "cnn"}) {
    const bool mlp = std::string(name) == "mlp";
    // one model trained by two trainers, the clock on in one of them: same weights, same work
    const std::shared_ptr<Model> model = mlp ? make_model(models::Mlp()) : make_model(models::Cnn());
    TrainerOptions untimed = quiet;
    untimed.timing = false;
    Trainer trainer(model, quiet), untimed_trainer(model, untimed);
    FitOptions fit;
    fit.loader.batch_size = mlp ? 32 : 128;
    fit.loader.shuffle = false;
    if (!mlp) fit.steps_per_epoch = 10;
    auto run = [&](bool timing) { (timing ? trainer : untimed_trainer).fit(data, fit); };
    const double floor = paired_ratio(rounds, [&] { run(false); }, [&] { run(false); });
    const double measured = paired_ratio(rounds, [&] { run(false); }, [&] { run(true); });
    const double step_ns = trainer.measured().stats.step().mean_ms * 1e6;
    std::printf("timers on / off, %s batch %lld: accounting %.0f ns of a %.1f us step = %.4f (goal <= 1.002); "
                "measured on/off %.4f, off/off %.4f (this machine's noise)\n",
                name, static_cast<long long>(fit.loader.batch_size), accounting_ns, step_ns * 1e-3,
                1 + accounting_ns / step_ns, measured, floor);
  }

  FitOptions plain;
  plain.loader.batch_size = 32;
  plain.steps_per_epoch = 20;
  FitOptions slow = plain, slow_async = plain;
  slow.callbacks = {std::make_shared<SlowCallback>(20.0)};
  auto async_callback = std::make_shared<SlowCallback>(20.0);
  async_callback->set_async(true);
  slow_async.callbacks = {async_callback};
  Trainer a(make_model(models::Mlp()), quiet), b(make_model(models::Mlp()), quiet), c(make_model(models::Mlp()), quiet);
  const int few = std::max(3, rounds / 4);
  const double sync_ratio = paired_ratio(few, [&] { a.fit(data, plain); }, [&] { b.fit(data, slow); });
  const double async_ratio = paired_ratio(few, [&] { a.fit(data, plain); }, [&] { c.fit(data, slow_async); });
  std::printf("sync 20 ms callback / none, mlp batch 32: %.1fx slower (the stall to remove)\n", sync_ratio);
  std::printf("async 20 ms callback / none, mlp batch 32: %.1fx slower (queue full: the callback is slower than the step)\n",
              async_ratio);
}
