// What capturing a whole training step as a CUDA graph is worth on a launch-bound step, before the
// trainer does it (the CUDA-graph issue): a hand-written libtorch step of the seed MLP (forward,
// cross-entropy, backward, a plain SGD update, the gradients zeroed in place) on static device
// buffers, run eagerly and replayed from one capture, in alternating rounds (rounds.hpp). Prints the
// time per step of each and the ratio, and the largest relative difference between the two's losses
// over the first steps from the same weights and batches (they compute the same function).
// Built only where libtorch has CUDA.
//   ./bench_cuda_graph [rounds=5] [batch=32] [steps=2000]

#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/cuda.h>
#include <torch/nn/functional/loss.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "fitscope/fitscope.hpp"
#include "rounds.hpp"

namespace {

/// One seed MLP with its static input and target buffers and its step.
struct Step {
  explicit Step(int64_t batch) {
    torch::manual_seed(0);
    model = fitscope::models::Mlp();
    model->to(torch::kCUDA);
    x = torch::zeros({batch, 1, 28, 28}, torch::kCUDA);
    y = torch::zeros({batch}, torch::dtype(torch::kLong).device(torch::kCUDA));
    loss = torch::zeros({}, torch::kCUDA);
    for (auto& p : model->parameters()) p.mutable_grad() = torch::zeros_like(p);
  }
  void operator()() {
    for (auto& p : model->parameters()) p.mutable_grad().zero_();
    const at::Tensor l = torch::nn::functional::cross_entropy(model->forward(x), y);
    l.backward();
    torch::NoGradGuard no_grad;
    for (auto& p : model->parameters()) p.add_(p.grad(), -0.01);
    loss.copy_(l);
  }
  fitscope::models::Mlp model{nullptr};
  at::Tensor x, y, loss;
};

}  // namespace

int main(int argc, char** argv) {
  if (!torch::cuda::is_available()) {
    std::printf("no CUDA device here: skipped\n");
    return 1;
  }
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 5;
  const int64_t batch = argc > 2 ? std::atoll(argv[2]) : 32;
  const int64_t steps = argc > 3 ? std::atoll(argv[3]) : 2000;
  const int64_t batches = 64;
  torch::manual_seed(1);
  const at::Tensor inputs = torch::randn({batches, batch, 1, 28, 28}, torch::kCUDA);
  const at::Tensor targets = torch::randint(0, 10, {batches, batch}, torch::dtype(torch::kLong).device(torch::kCUDA));

  Step eager(batch), captured(batch);
  at::cuda::CUDAGraph graph;
  {
    // capture on a side stream after a few warm-up steps there (the allocator's pools settle)
    torch::cuda::synchronize();
    const c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool();
    const c10::cuda::CUDAStreamGuard guard(side);
    Step warm(batch);
    for (int i = 0; i < 3; ++i) warm();
    graph.capture_begin();
    captured();
    graph.capture_end();
    torch::cuda::synchronize();
  }
  // the same function: losses over the first steps from the same weights and batches (the capture
  // itself ran no step: captured's weights are still the initial ones)
  double worst = 0;
  const int64_t compared = 100;
  std::vector<at::Tensor> eager_losses, graph_losses;
  for (int64_t i = 0; i < compared; ++i) {
    eager.x.copy_(inputs[i % batches]);
    eager.y.copy_(targets[i % batches]);
    eager();
    eager_losses.push_back(eager.loss.clone());
    captured.x.copy_(inputs[i % batches]);
    captured.y.copy_(targets[i % batches]);
    graph.replay();
    graph_losses.push_back(captured.loss.clone());
  }
  for (int64_t i = 0; i < compared; ++i) {
    const double a = eager_losses[i].item<double>(), b = graph_losses[i].item<double>();
    worst = std::max(worst, std::abs(a - b) / std::max(std::abs(a), 1e-12));
  }
  auto run = [&](bool replay) {
    Step& s = replay ? captured : eager;
    for (int64_t i = 0; i < steps; ++i) {
      s.x.copy_(inputs[i % batches]);
      s.y.copy_(targets[i % batches]);
      if (replay) {
        graph.replay();
      } else {
        s();
      }
    }
    torch::cuda::synchronize();
  };
  std::vector<double> graph_s, eager_s;
  // the median over rounds of time(eager) / time(replay), rounds alternating which runs first
  const double ratio = fitscope::bench::paired_ratio(
      rounds, [&] { graph_s.push_back(fitscope::bench::seconds([&] { run(true); })); },
      [&] { eager_s.push_back(fitscope::bench::seconds([&] { run(false); })); });
  const double graph_ms = fitscope::bench::median(graph_s) * 1e3 / static_cast<double>(steps);
  const double eager_ms = fitscope::bench::median(eager_s) * 1e3 / static_cast<double>(steps);
  std::printf("seed MLP batch %lld, hand-written step: eager %.4f ms/step, CUDA graph replay %.4f ms/step: "
              "graph %.2fx faster (median of %d paired rounds); losses of the first %lld steps differ by at most "
              "%.2e relative\n",
              static_cast<long long>(batch), eager_ms, graph_ms, ratio, rounds, static_cast<long long>(compared), worst);
}
