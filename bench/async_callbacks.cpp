// Async callbacks, side by side in one process:
//  1. the training thread's cost of handing one batch hook to an async callback (goal <= 1 us);
//  2. the seed MLP at batch 32 with a callback that blocks 20 ms in every on_train_batch_end: no
//     callback, sync, async. The goal (async >= 0.97 of no callback) cannot hold when the
//     callback's own work per batch is ~200x the step: a bounded queue must fill and then the
//     callback sets the pace. Printed as measured.
//   ./bench_async_callbacks
#include <fitscope/fitscope.hpp>

#include <chrono>
#include <cstdio>
#include <thread>

#include "rounds.hpp"

using namespace fitscope;

namespace {

struct Blocking : Callback {
  explicit Blocking(double ms) : ms(ms) {}
  std::string name() const override { return "Blocking"; }
  void on_train_batch_end(int64_t, Logs&) override {
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
  }
  double ms;
};

double samples_per_s(const TensorDataset& data, std::shared_ptr<Callback> callback) {
  Trainer trainer{models::Mlp()};
  FitOptions fit;
  fit.steps_per_epoch = 100;
  if (callback) fit.callbacks.push_back(callback);
  const double s = bench::seconds([&] { trainer.fit(data, fit); });
  return 100.0 * 32 / s;
}

}  // namespace

int main() {
  // 1. enqueue cost
  AsyncCallback async(std::make_shared<Callback>());
  Logs logs{{"loss", 0.5}, {"accuracy", 0.9}}, no_logs;
  constexpr int kCalls = 200000;
  async.on_train_begin(no_logs);
  const double s = bench::seconds([&] {
    for (int i = 0; i < kCalls; ++i) async.on_train_batch_end(i, logs);
  });
  async.on_train_end(no_logs);
  std::printf("1. async batch hook, cost on the training thread: %.0f ns per call (goal <= 1000 ns)\n", 1e9 * s / kCalls);

  // 2. a 20 ms callback on the seed MLP
  SyntheticOptions data_options;
  data_options.size = 3200;
  const TensorDataset data = make_synthetic(data_options);
  const double none = samples_per_s(data, nullptr);
  const double sync = samples_per_s(data, std::make_shared<Blocking>(20));
  auto blocking = std::make_shared<Blocking>(20);
  blocking->set_async(true);
  const double asynchronous = samples_per_s(data, blocking);
  std::printf("2. seed MLP, batch 32, a 20 ms callback every batch: none %.0f samples/s, sync %.0f (x%.3f), "
              "async %.0f (x%.3f)\n",
              none, sync, sync / none, asynchronous, asynchronous / none);
}
