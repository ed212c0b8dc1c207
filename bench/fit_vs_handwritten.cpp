// fit() (step clock on, progress bar off, accuracy on) against a hand-written libtorch loop doing the
// same work: forward, loss, backward, optimizer step, running loss and accuracy accumulated on the
// device and read once per epoch. Same model (identical initial weights), same data, same batch
// order; the two alternate round by round in one process, so machine noise hits both alike. Prints
// the median time of each and the median of the per-round ratios, twice per model:
//   "best": fit with its default threads (--threads auto, searched in the untimed first fit) against
//           the loop given the best setting found by hand (bench_thread_policy's grid: the MLP on 1
//           intra-op thread, BLAS 1; the CNN on intra-op = the cores, BLAS 1), set before every round:
//           the cost of fit itself, with its loader thread (workers 1) and without (workers 0);
//   "defaults": the same fit against the loop left at the libraries' own defaults (libtorch's
//           intra-op count, the BLAS pool at its own size): what the thread policy is worth.
//   ./bench_fit_vs_handwritten [rounds] [mlp|cnn|gpu]
// `simplest STEPS` runs the simplest hand-written loop a new user writes (narrow slices of one tensor,
// Adam, no metrics, libtorch's own thread defaults) on the seed MLP at batch 32 and prints its
// samples/s over the steps after the first 5: bench/small_steps.py sets it beside `fitscope train` and
// a Python loop, round by round.
// Goals: "best" ratio <= 1.02 for the seed MLP at batch 32, <= 1.005 for the seed CNN at batch 128;
// "defaults": hand / fit >= 1.25 for the seed CNN at batch 128.
// gpu (a CUDA device; skipped without one): the seed CNN at batch 16 and 256 and a larger
// convolutional model, on cuda:0, batches pinned and copied non-blocking on both sides: goal <= 1.02.

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/cuda.h>
#include <torch/nn/functional/loss.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/pooling.h>
#include <torch/nn/modules/activation.h>
#include <torch/optim/adam.h>
#include <torch/utils.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "fitscope/fitscope.hpp"
#include "rounds.hpp"

using namespace fitscope;
using Clock = std::chrono::steady_clock;
using fitscope::bench::median;

namespace {

/// A larger convolutional model for the GPU: three 3x3 convolutions (64, 128, 256 channels) on 28x28.
struct WideCnnImpl : torch::nn::Module {
  torch::nn::Sequential body;
  WideCnnImpl() {
    using namespace torch::nn;
    body = register_module(
        "body", Sequential(Conv2d(Conv2dOptions(1, 64, 3).padding(1)), ReLU(), Conv2d(Conv2dOptions(64, 128, 3).padding(1)),
                           ReLU(), MaxPool2d(MaxPool2dOptions(2)), Conv2d(Conv2dOptions(128, 256, 3).padding(1)), ReLU(),
                           MaxPool2d(MaxPool2dOptions(2)), Flatten(), Linear(256 * 7 * 7, 10)));
  }
  at::Tensor forward(const at::Tensor& x) { return body->forward(x); }
};
TORCH_MODULE(WideCnn);

template <typename Module>
double handwritten_epoch(Module& model, torch::optim::Adam& optimizer, const TensorDataset& data,
                         int64_t batch_size, int64_t steps, const c10::Device& device = c10::Device(c10::kCPU)) {
  const auto start = Clock::now();
  model->train(true);
  auto loss_sum = at::zeros({}, at::TensorOptions().dtype(at::kDouble).device(device));
  auto correct = at::zeros({}, at::TensorOptions().dtype(at::kLong).device(device));
  int64_t seen = 0;
  const int64_t n = std::min(data.size(), steps * batch_size);
  for (int64_t begin = 0; begin < n; begin += batch_size) {
    const int64_t count = std::min(batch_size, n - begin);
    // on a GPU the data is pinned: a narrow of it copies non-blocking, as the trainer's batches do
    const at::Tensor x = data.inputs().narrow(0, begin, count).to(device, /*non_blocking=*/true);
    const at::Tensor y = data.targets().narrow(0, begin, count).to(device, /*non_blocking=*/true);
    const at::Tensor out = model->forward(x);
    const at::Tensor loss = torch::nn::functional::cross_entropy(out, y);
    loss.backward();
    optimizer.step();
    optimizer.zero_grad();
    loss_sum.add_(loss.detach(), static_cast<double>(count));
    correct.add_(out.argmax(1).eq(y).sum());
    seen += count;
  }
  volatile double sink = loss_sum.item<double>() / seen + static_cast<double>(correct.item<int64_t>()) / seen;
  (void)sink;
  return std::chrono::duration<double>(Clock::now() - start).count();
}


/// The simplest loop: per step a narrow slice of the inputs and targets, forward, cross-entropy,
/// zero_grad, backward, Adam's step. Samples/s over the steps after the first `warmup`.
double simplest_loop_samples_per_s(int64_t steps, int64_t batch_size, int64_t warmup) {
  SyntheticOptions data_options;
  data_options.size = steps * batch_size;
  const TensorDataset data = make_synthetic(data_options);
  torch::manual_seed(0);
  models::Mlp model;
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(1e-3));
  double measured_s = 0;
  int64_t samples = 0;
  for (int64_t step = 0; step < steps; ++step) {
    const auto start = Clock::now();
    const at::Tensor x = data.inputs().narrow(0, step * batch_size, batch_size);
    const at::Tensor y = data.targets().narrow(0, step * batch_size, batch_size);
    const at::Tensor loss = torch::nn::functional::cross_entropy(model->forward(x), y);
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
    if (step >= warmup) {
      measured_s += std::chrono::duration<double>(Clock::now() - start).count();
      samples += batch_size;
    }
  }
  return static_cast<double>(samples) / measured_s;
}

/// The threads the hand-written loop runs with, set before each of its rounds.
struct HandThreads {
  const char* label;
  ThreadSetting setting;
};

/// Only on a change, as fit does: ATen's setter rebuilds its thread pools, whose new threads would
/// then start inside the timed round.
void set_by_hand(const ThreadSetting& s) {
  if (at::get_num_threads() != s.intra_op) at::set_num_threads(static_cast<int>(s.intra_op));
  loaded_blas().set_threads(s.blas);
}

/// `workers`: fit's loader threads (1, its default: a batch is built beside the step; 0: on the
/// training thread, as the hand-written loop takes its batches).
template <typename Module>
void compare(const char* name, int64_t batch_size, int64_t examples, int64_t steps, int rounds, double goal,
             const HandThreads& hand_threads, int64_t workers = 1, const c10::Device& device = c10::Device(c10::kCPU)) {
  SyntheticOptions data_options;
  data_options.size = examples;
  TensorDataset data = make_synthetic(data_options);
  if (device.is_cuda()) data = TensorDataset(data.inputs().pin_memory(), data.targets().pin_memory());

  torch::manual_seed(0);
  Module reference;
  Module handwritten_model;
  Module fit_model;
  {
    torch::NoGradGuard no_grad;
    for (auto* m : {&handwritten_model, &fit_model}) {
      auto params = (*m)->parameters();
      auto ref = reference->parameters();
      for (size_t i = 0; i < params.size(); ++i) params[i].copy_(ref[i]);
    }
  }
  handwritten_model->to(device);
  torch::optim::Adam optimizer(handwritten_model->parameters(), torch::optim::AdamOptions(1e-3));
  TrainerOptions trainer_options;
  trainer_options.warmup_steps = 0;
  trainer_options.device = device;
  trainer_options.cuda_graph = CudaGraphMode::off;  // eager against eager (bench_cuda_graph has the captured step)
  Trainer trainer(fit_model, trainer_options);
  FitOptions fit;
  fit.loader.batch_size = batch_size;
  fit.loader.shuffle = false;
  fit.steps_per_epoch = steps;
  fit.loader.workers = workers;

  // untimed rounds to warm allocators and caches; fit's first runs its whole thread search
  set_by_hand(hand_threads.setting);
  handwritten_epoch(handwritten_model, optimizer, data, batch_size, steps, device);
  FitOptions search = fit;  // one pass long enough for the whole search, then the usual round
  search.steps_per_epoch = trainer.warmup_steps() + steps;
  trainer.fit(data, search);
  trainer.fit(data, fit);

  std::vector<double> hand_s, fit_s;
  for (int r = 0; r < rounds; ++r) {
    const bool fit_first = r % 2 == 1;
    for (int k = 0; k < 2; ++k) {
      if ((k == 0) == fit_first) {
        const auto start = Clock::now();
        trainer.fit(data, fit);
        fit_s.push_back(std::chrono::duration<double>(Clock::now() - start).count());
      } else {
        set_by_hand(hand_threads.setting);
        hand_s.push_back(handwritten_epoch(handwritten_model, optimizer, data, batch_size, steps, device));
      }
    }
  }
  // rounds alternate which side goes first; each round's ratio compares two neighbours in time
  std::vector<double> ratios;
  for (size_t i = 0; i < hand_s.size(); ++i) ratios.push_back(fit_s[i] / hand_s[i]);
  const double hand = median(hand_s), with_fit = median(fit_s);
  const ThreadSetting& fit_threads = trainer.measured().threads.setting;
  std::printf("%-4s batch %4lld, workers %lld, %-8s hand-written (%lldx%lld) %8.3f ms/round (%7.1f us/step)   fit (%lldx%lld, %s) %8.3f "
              "ms/round (%7.1f us/step)   ratio fit/hand %.4f (hand/fit %.3f)  (goal fit/hand <= %.3f)\n",
              name, static_cast<long long>(batch_size), static_cast<long long>(workers), hand_threads.label, static_cast<long long>(hand_threads.setting.intra_op),
              static_cast<long long>(hand_threads.setting.blas), hand * 1e3, hand * 1e6 / steps,
              static_cast<long long>(fit_threads.intra_op), static_cast<long long>(fit_threads.blas),
              trainer.measured().threads.chosen_by.c_str(), with_fit * 1e3, with_fit * 1e6 / steps, median(ratios),
              1 / median(ratios), goal);
  if (!trainer.measured().threads.candidates.empty()) {
    std::printf("     the search's medians:");
    for (const ThreadCandidate& c : trainer.measured().threads.candidates) {
      std::printf(" %lldx%lld %.1f us", static_cast<long long>(c.setting.intra_op), static_cast<long long>(c.setting.blas),
                  c.step_ms * 1e3);
    }
    std::printf("\n");
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "simplest") {
    const int64_t steps = argc > 2 ? std::atoll(argv[2]) : 1875;
    std::printf("simplest_samples_per_s %.1f intra_op %d blas %lld\n", simplest_loop_samples_per_s(steps, 32, 5),
                at::get_num_threads(), static_cast<long long>(loaded_blas().threads()));
    return 0;
  }
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 31;
  // read before anything sets them: what a hand-written program gets without asking
  const HandThreads defaults{"defaults", {at::get_num_threads(), loaded_blas().threads()}};
  // the best settings by hand, from bench_thread_policy's grid: the MLP on one thread, the CNN on every core
  const HandThreads mlp_best{"best", {1, 1}};
  const HandThreads cnn_best{"best", {core_share(1), 1}};
  std::printf("fit vs hand-written libtorch loop, %d alternating rounds, medians; threads as intra-op x BLAS (%s)\n",
              rounds, loaded_blas().name().c_str());
  const std::string only = argc > 2 ? argv[2] : "";
  // a round: one pass of 200 steps for the MLP; 10 steps (and 50) for the CNN, whose step is ~100x longer
  if (only.empty() || only == "mlp") {
    compare<models::Mlp>("mlp", 32, 6400, 200, rounds, 1.02, mlp_best);
    compare<models::Mlp>("mlp", 32, 6400, 200, rounds, 1.02, mlp_best, /*workers=*/0);
    compare<models::Mlp>("mlp", 32, 6400, 200, rounds, 1.0, defaults);
  }
  if (only.empty() || only == "cnn") {
    compare<models::Cnn>("cnn", 128, 6400, 10, rounds, 1.005, cnn_best);
    // the same with rounds of 50 steps: the loader's start (8 batches prefetched at once beside the
    // first steps) weighs on a round of 10
    compare<models::Cnn>("cnn", 128, 6400, 50, rounds, 1.005, cnn_best);
    compare<models::Cnn>("cnn", 128, 6400, 10, rounds, 1.005, cnn_best, /*workers=*/0);
    compare<models::Cnn>("cnn", 128, 6400, 10, rounds, 1 / 1.25, defaults);
  }
  if (only == "gpu") {
    if (!torch::cuda::is_available()) {
      std::printf("gpu: no CUDA device here, skipped\n");
      return 0;
    }
    const c10::Device gpu(c10::kCUDA, 0);
    compare<models::Cnn>("cnn", 16, 8000, 200, rounds, 1.02, cnn_best, 1, gpu);
    compare<models::Cnn>("cnn", 256, 25600, 100, rounds, 1.02, cnn_best, 1, gpu);
    compare<WideCnn>("wide", 128, 12800, 100, rounds, 1.02, cnn_best, 1, gpu);
  }
}
