// fit() (step clock on, progress bar off, accuracy on) against a hand-written libtorch loop doing the
// same work: forward, loss, backward, optimizer step, running loss and accuracy accumulated on the
// device and read once per epoch. Same model (identical initial weights), same data, same batch
// order, one intra-op thread; the two alternate round by round in one process, so machine noise hits
// both alike. Prints the median time of each and the median of the per-round ratios.
//   ./bench_fit_vs_handwritten [rounds] [mlp|cnn]
// Goals: ratio <= 1.02 for the seed MLP at batch 32, <= 1.005 for the seed CNN at batch 128.

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/nn/functional/loss.h>
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

template <typename Module>
double handwritten_epoch(Module& model, torch::optim::Adam& optimizer, const TensorDataset& data,
                         int64_t batch_size, int64_t steps) {
  const auto start = Clock::now();
  model->train(true);
  auto loss_sum = at::zeros({}, at::kDouble);
  auto correct = at::zeros({}, at::kLong);
  int64_t seen = 0;
  const int64_t n = std::min(data.size(), steps * batch_size);
  for (int64_t begin = 0; begin < n; begin += batch_size) {
    const int64_t count = std::min(batch_size, n - begin);
    const at::Tensor x = data.inputs().narrow(0, begin, count);
    const at::Tensor y = data.targets().narrow(0, begin, count);
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


template <typename Module>
void compare(const char* name, int64_t batch_size, int64_t examples, int64_t steps, int rounds, double goal) {
  SyntheticOptions data_options;
  data_options.size = examples;
  const TensorDataset data = make_synthetic(data_options);

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
  torch::optim::Adam optimizer(handwritten_model->parameters(), torch::optim::AdamOptions(1e-3));
  TrainerOptions trainer_options;
  trainer_options.warmup_steps = 0;
  Trainer trainer(fit_model, trainer_options);
  FitOptions fit;
  fit.batch_size = batch_size;
  fit.shuffle = false;
  fit.steps_per_epoch = steps;

  // one untimed round each to warm allocators and caches
  handwritten_epoch(handwritten_model, optimizer, data, batch_size, steps);
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
        hand_s.push_back(handwritten_epoch(handwritten_model, optimizer, data, batch_size, steps));
      }
    }
  }
  // rounds alternate which side goes first; each round's ratio compares two neighbours in time
  std::vector<double> ratios;
  for (size_t i = 0; i < hand_s.size(); ++i) ratios.push_back(fit_s[i] / hand_s[i]);
  const double hand = median(hand_s), with_fit = median(fit_s);
  std::printf("%-4s batch %4lld: hand-written %8.3f ms/round (%7.1f us/step)   fit %8.3f ms/round (%7.1f us/step)"
              "   ratio fit/hand %.4f  (goal <= %.3f)\n",
              name, static_cast<long long>(batch_size), hand * 1e3, hand * 1e6 / steps, with_fit * 1e3,
              with_fit * 1e6 / steps, median(ratios), goal);
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 31;
  at::set_num_threads(1);
  std::printf("fit vs hand-written libtorch loop, %d alternating rounds, medians, 1 intra-op thread\n", rounds);
  const std::string only = argc > 2 ? argv[2] : "";
  // a round: one pass of 200 steps for the MLP; 10 steps for the CNN, whose step is ~200x longer
  if (only.empty() || only == "mlp") compare<models::Mlp>("mlp", 32, 6400, 200, rounds, 1.02);
  if (only.empty() || only == "cnn") compare<models::Cnn>("cnn", 128, 6400, 10, rounds, 1.005);
}
