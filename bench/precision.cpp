// bfloat16 autocast (--precision bf16) against float32: the same model (identical initial weights),
// data and batch order, fixed threads (intra-op = the cores, BLAS 1), each round one fit of `steps`
// batches per precision, alternating which goes first. Prints samples/s of each, the median of the
// per-round ratios bf16 / fp32 of samples/s, and where the time went (forward and backward p50).
//   ./bench_precision [rounds] [steps]
// Models: the seed CNN at batch 128, and an MLP large enough for its matrix products to dominate
// (784 -> 2048 -> 2048 -> 10) at batch 256. Below 1 means bf16 is slower: expected on CPUs without
// bfloat16 instructions, where libtorch converts in software.

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/utils.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "fitscope/fitscope.hpp"
#include "rounds.hpp"

using namespace fitscope;

namespace {

struct WideMlpImpl : torch::nn::Module {
  torch::nn::Sequential body;
  WideMlpImpl() {
    using namespace torch::nn;
    body = register_module("body", Sequential(Flatten(), Linear(784, 2048), ReLU(), Linear(2048, 2048), ReLU(), Linear(2048, 10)));
  }
  at::Tensor forward(const at::Tensor& x) { return body->forward(x); }
};
TORCH_MODULE(WideMlp);

template <typename Module>
void compare(const std::string& name, Module module, int64_t batch_size, int rounds, int64_t steps,
             const TensorDataset& data) {
  std::shared_ptr<Model> fp32_model = make_model(module);
  torch::manual_seed(0);
  Module twin;  // the same architecture, made to hold the same initial weights
  std::shared_ptr<Model> bf16_model = make_model(twin);
  {
    torch::NoGradGuard no_grad;
    auto from = fp32_model->named_state();
    auto to = bf16_model->named_state();
    for (std::size_t i = 0; i < from.size(); ++i) to[i].second.copy_(from[i].second);
  }
  TrainerOptions options;
  options.threads.intra_op = static_cast<int64_t>(std::max(1u, std::thread::hardware_concurrency()));
  options.threads.blas = 1;
  options.warmup_steps = 2;
  options.warn = [](const std::string&) {};
  Trainer fp32(fp32_model, options);
  options.precision = Precision::bfloat16;
  Trainer bf16(bf16_model, options);
  FitOptions fit;
  fit.epochs = 1;
  fit.steps_per_epoch = steps;
  fit.loader.batch_size = batch_size;
  fit.loader.workers = 0;  // the batches on the training thread: only the model's cost differs
  fit.loader.shuffle = false;
  PhaseStats fp32_steps(0), bf16_steps(0);
  const double ratio = fitscope::bench::paired_ratio(
      rounds,
      [&] {
        fp32.fit(data, fit);
        fp32_steps.merge(fp32.measured().stats);
      },
      [&] {
        bf16.fit(data, fit);
        bf16_steps.merge(bf16.measured().stats);
      });
  const auto samples_per_s = [&](const PhaseStats& s) { return 1000.0 * batch_size / s.step().mean_ms; };
  std::printf("%-34s fp32 %9.0f samples/s (forward p50 %6.2f ms, backward %6.2f ms)\n", name.c_str(), samples_per_s(fp32_steps),
              fp32_steps.phase(Phase::forward).p50_ms, fp32_steps.phase(Phase::backward).p50_ms);
  std::printf("%-34s bf16 %9.0f samples/s (forward p50 %6.2f ms, backward %6.2f ms)\n", "", samples_per_s(bf16_steps),
              bf16_steps.phase(Phase::forward).p50_ms, bf16_steps.phase(Phase::backward).p50_ms);
  // time(fp32) / time(bf16) per round = samples/s of bf16 over fp32
  std::printf("%-34s bf16 / fp32 samples/s: %.2f (median of %d paired rounds)\n\n", "", 1.0 / ratio, rounds);
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 7;
  const int64_t steps = argc > 2 ? std::atoll(argv[2]) : 30;
  std::printf("bfloat16 autocast against float32; this CPU %s bfloat16 instructions (avx512_bf16 or amx_bf16); "
              "libtorch %s oneDNN (MKLDNN)\n\n",
              cpu_has_bf16_instructions() ? "has" : "has no", at::hasMKLDNN() ? "with" : "without");
  SyntheticOptions o;
  o.size = 256 * steps;
  const TensorDataset data = make_synthetic(o);
  torch::manual_seed(0);
  compare("seed CNN, batch 128", models::Cnn(), 128, rounds, steps, data);
  torch::manual_seed(0);
  compare("MLP 784-2048-2048-10, batch 256", WideMlp(), 256, rounds, steps, data);
}
