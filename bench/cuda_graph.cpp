// What capturing a whole training step as a CUDA graph is worth on a launch-bound step, before the
// trainer does it (the CUDA-graph issue): a hand-written libtorch step of the seed MLP (forward,
// cross-entropy, backward, a plain SGD update, the gradients zeroed in place) on static device
// buffers, run eagerly and replayed from one capture, in alternating rounds (rounds.hpp). Prints the
// time per step of each and the ratio, and the largest relative difference between the two's losses
// over the first steps from the same weights and batches (they compute the same function). Then
// fitscope's own fit, paired rounds of --cuda-graph off against on (the seed MLP at `batch`) and off
// against auto (the seed CNN at batch 256, which is not launch-bound): the mean measured step of each,
// the ratios (the goals: captured >= 1.5x the hand-written eager loop and >= 1.5x fitscope
// eager; auto on the CNN off, or within 2 % of eager) and what the trial decided.
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

/// A fitscope fit on the GPU with the CUDA graph `mode`: its mean measured step (ms) and what the trial decided.
struct FitFigure {
  double step_ms = 0;
  fitscope::CudaGraphOutcome graph;
};

FitFigure fit_figure(bool cnn, int64_t batch, fitscope::CudaGraphMode mode, int64_t steps,
                     const fitscope::TensorDataset& data) {
  torch::manual_seed(0);
  fitscope::TrainerOptions options;
  options.device = c10::Device(c10::kCUDA, 0);
  options.cuda_graph = mode;
  fitscope::FitOptions fit;
  fit.loader.batch_size = batch;
  fit.steps_per_epoch = steps;
  std::unique_ptr<fitscope::Trainer> trainer =
      cnn ? std::make_unique<fitscope::Trainer>(fitscope::models::Cnn(28, 1, 10), options)
          : std::make_unique<fitscope::Trainer>(fitscope::models::Mlp(), options);
  trainer->fit(data, fit);
  torch::cuda::synchronize();
  return {trainer->measured().stats.step().mean_ms, trainer->measured().cuda_graph};
}

/// Paired rounds of two fits (which runs first alternates): the median step of each, and the last outcomes.
std::pair<FitFigure, FitFigure> paired_fits(int rounds, bool cnn, int64_t batch, fitscope::CudaGraphMode a,
                                            fitscope::CudaGraphMode b, int64_t steps, const fitscope::TensorDataset& data) {
  std::vector<double> a_ms, b_ms;
  FitFigure fa, fb;
  fit_figure(cnn, batch, a, 60, data);  // untimed: the kernels and the allocator settle
  for (int r = 0; r < rounds; ++r) {
    if (r % 2 == 0) {
      fa = fit_figure(cnn, batch, a, steps, data);
      fb = fit_figure(cnn, batch, b, steps, data);
    } else {
      fb = fit_figure(cnn, batch, b, steps, data);
      fa = fit_figure(cnn, batch, a, steps, data);
    }
    a_ms.push_back(fa.step_ms);
    b_ms.push_back(fb.step_ms);
  }
  fa.step_ms = fitscope::bench::median(a_ms);
  fb.step_ms = fitscope::bench::median(b_ms);
  return {fa, fb};
}

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

  // fitscope's fit: eager against the captured step on the seed MLP, eager against auto on the seed CNN at 256
  fitscope::SyntheticOptions examples;
  examples.size = 20000;
  const fitscope::TensorDataset data = fitscope::make_synthetic(examples);
  using fitscope::CudaGraphMode;
  const auto [fit_eager, fit_graph] = paired_fits(rounds, false, batch, CudaGraphMode::off, CudaGraphMode::on, 400, data);
  std::printf("fitscope fit, seed MLP batch %lld: eager %.4f ms/step, CUDA graph %.4f ms/step: captured %.2fx fitscope eager, "
              "%.2fx the hand-written eager loop (goals >= 1.5x each); the trial: %s; %lld steps checked both ways, loss "
              "within %.1e, weights within %.1e\n",
              static_cast<long long>(batch), fit_eager.step_ms, fit_graph.step_ms, fit_eager.step_ms / fit_graph.step_ms,
              eager_ms / fit_graph.step_ms, fit_graph.graph.reason.c_str(),
              static_cast<long long>(fit_graph.graph.checked_steps), fit_graph.graph.max_loss_difference,
              fit_graph.graph.max_weight_difference);
  const auto [cnn_eager, cnn_auto] = paired_fits(rounds, true, 256, CudaGraphMode::off, CudaGraphMode::automatic, 300, data);
  std::printf("fitscope fit, seed CNN batch 256: eager %.4f ms/step, auto %.4f ms/step (%.3fx; goal: capture off, or "
              "within 2 %%): auto %s: %s\n",
              cnn_eager.step_ms, cnn_auto.step_ms, cnn_eager.step_ms / cnn_auto.step_ms,
              cnn_auto.graph.kept ? "replayed" : "stayed eager", cnn_auto.graph.reason.c_str());
}
