// The GPU path, built only where libtorch has CUDA and run on a machine with a GPU (ctest -L gpu):
// no host synchronisation in the loop's steady state (CUDA's sync debug mode turns any into an
// error), the phases timed by CUDA events, the layers timed by CUDA events and the memory read from
// the caching allocator, NVML's utilization sampling, and the NCCL context in a
// world of one (one GPU): its collectives, the gradient reducer on it, and the CLI through it; and the
// training step captured as a CUDA graph (TrainerOptions::cuda_graph): eager's losses, no
// synchronisation once replayed, a host read in the forward pass and a partial batch run eagerly.

#include <c10/cuda/CUDAFunctions.h>
#include <torch/torch.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <unistd.h>

#include "fitscope/fitscope.hpp"

namespace fitscope {
namespace {

/// Turns CUDA's sync debug mode to "error" for batches [from, to): a synchronising call there throws.
class NoSyncBetween : public Callback {
 public:
  NoSyncBetween(int64_t from, int64_t to) : from_(from), to_(to) {}
  fitscope::CallbackTraits traits() const override { fitscope::CallbackTraits t; t.reads_batch_logs = false; return t; }
  void on_train_batch_begin(int64_t batch, Logs&) override {
    if (batch == from_) c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_ERROR);
  }
  void on_train_batch_end(int64_t batch, Logs&) override {
    if (batch + 1 == to_) c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_DISABLED);
  }

 private:
  int64_t from_, to_;
};

/// Fits 4000 synthetic examples: "" when it ran through, else the error of the synchronising call that
/// NoSyncBetween turned into one (sync debug mode turned off again).
std::string fit_until_a_sync(Trainer& trainer, const FitOptions& fit) {
  SyntheticOptions data;
  data.size = 4000;
  try {
    trainer.fit(make_synthetic(data), fit);
  } catch (const std::exception& e) {
    c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_DISABLED);
    return e.what();
  }
  return {};
}

TEST(Gpu, TheSteadyStateLoopNeverSynchronisesAndEventsTimeTheDevicePhases) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device here";
  torch::manual_seed(0);
  TrainerOptions options;
  options.device = c10::Device(c10::kCUDA, 0);
  options.cuda_graph = CudaGraphMode::off;  // the trial synchronises (it is warm-up): see the CUDA-graph tests
  Trainer trainer(models::Cnn(28, 1, 10), options);
  FitOptions fit;
  fit.loader.batch_size = 64;
  fit.steps_per_epoch = 60;
  fit.callbacks.push_back(std::make_shared<NoSyncBetween>(10, 50));  // the epoch's logs come after
  const std::string synchronised = fit_until_a_sync(trainer, fit);
  ASSERT_TRUE(synchronised.empty()) << "the loop synchronised with the GPU in its steady state: " << synchronised;
  const DeviceTimer* device = trainer.measured().device_timer.get();
  ASSERT_NE(device, nullptr);
  // every warm-up step, then one measured step in sample_every
  const int64_t warmup = device->stats().warmup_steps(), every = device->sample_every();
  EXPECT_EQ(device->stats().steps(), warmup + (60 - warmup + every - 1) / every);
  EXPECT_GT(device->resolved_in_loop(), 0);  // resolved lazily, without waiting
  const std::vector<Phase> measured = device->measured_phases();
  for (Phase p : {Phase::h2d, Phase::forward, Phase::backward, Phase::optimizer, Phase::metrics}) {
    EXPECT_NE(std::find(measured.begin(), measured.end(), p), measured.end()) << phase_name(p);
  }
  EXPECT_GT(device->stats().phase(Phase::backward).mean_ms, 0);
}

/// One level below the phases on a GPU: the probed steps' layers timed by CUDA events and the steps'
/// memory read from the caching allocator, neither synchronising in the steady state; the layers'
/// device times lie within their phases', the convolution's operations are the closed-form count, and
/// the matrix products are set against the GPU's own measured peak.
TEST(Gpu, LayersAreTimedByCudaEventsAndMemoryIsTheCachingAllocatorsWithoutSynchronising) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device here";
  torch::manual_seed(0);
  TrainerOptions options;
  options.device = c10::Device(c10::kCUDA, 0);
  options.cuda_graph = CudaGraphMode::off;  // a replayed step has no layers for the host to see
  options.layer_probe_every = 4;
  Trainer trainer(models::Cnn(28, 1, 10), options);
  FitOptions fit;
  constexpr int64_t kBatch = 64;
  fit.loader.batch_size = kBatch;
  fit.steps_per_epoch = 60;
  fit.callbacks.push_back(std::make_shared<NoSyncBetween>(10, 50));
  const std::string synchronised = fit_until_a_sync(trainer, fit);
  ASSERT_TRUE(synchronised.empty()) << "the probe or the memory count synchronised with the GPU: " << synchronised;
  const FitMeasurements& m = trainer.measured();
  const LayerTimes& t = m.layers;
  ASSERT_TRUE(t.why_not.empty()) << t.why_not;
  EXPECT_TRUE(t.device_clock);
  EXPECT_GE(t.probed_steps, 5);  // one measured step in 4 of about 55
  const auto conv = std::find_if(t.layers.begin(), t.layers.end(), [](const LayerTime& l) { return l.name == "conv"; });
  ASSERT_NE(conv, t.layers.end());
  EXPECT_GT(conv->forward_ns, 0);
  EXPECT_GT(conv->backward_ns, 0);
  EXPECT_DOUBLE_EQ(t.per_step(conv->forward_flops), 2.0 * kBatch * 32 * 26 * 26 * 1 * 3 * 3);
  EXPECT_GE(t.unattributed_forward_ns(), 0);
  EXPECT_GE(t.unattributed_backward_ns(), 0);
  std::printf("layers on the GPU: forward %.3f ms (unattributed %.1f %%), backward %.3f ms (unattributed %.1f %%), probe %+.0f %%\n",
              t.per_step_ms(t.forward_phase_ns), 100.0 * t.unattributed_forward_ns() / std::max<int64_t>(t.forward_phase_ns, 1),
              t.per_step_ms(t.backward_phase_ns), 100.0 * t.unattributed_backward_ns() / std::max<int64_t>(t.backward_phase_ns, 1),
              t.probe_cost * 100);
  ASSERT_TRUE(m.peak.has_value());
  EXPECT_EQ(m.peak->device, "cuda:0");
  EXPECT_GT(m.peak->gemm_gflops, 1000);  // any datacenter GPU's float32 matrix product: more than a TFLOP/s
  const MemoryStats& memory = m.memory;
  ASSERT_TRUE(memory.why_not.empty()) << memory.why_not;
  EXPECT_EQ(memory.device, "cuda:0");
  EXPECT_GT(memory.steps(), 0);
  // the forward holds at least the convolution's output above the step's start (float32)
  EXPECT_GE(memory.phase(Phase::forward).peak_bytes, kBatch * 32 * 26 * 26 * 4);
  EXPECT_GT(memory.phase(Phase::backward).allocated_bytes, 0);
  std::printf("memory on the GPU: step peak %.1f MB above its start, %.1f MB allocated a step, held %.1f MB\n",
              static_cast<double>(memory.step_peak_bytes()) * 1e-6, memory.allocated_per_step() * 1e-6,
              static_cast<double>(memory.held_at_end()) * 1e-6);
}

TEST(Gpu, ProbesTimeTheDevicesOwnWorkInWarmupAndTheSummaryGivesItsIdleShare) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device here";
  torch::manual_seed(0);
  TrainerOptions options;
  options.device = c10::Device(c10::kCUDA, 0);
  options.warmup_steps = 11;  // three probes
  options.cuda_graph = CudaGraphMode::off;  // measured steps after the warm-up, not the trial's
  Trainer trainer(models::Mlp(), options);
  FitOptions fit;
  fit.loader.batch_size = 32;
  fit.steps_per_epoch = 40;
  SyntheticOptions data;
  data.size = 2000;
  trainer.fit(make_synthetic(data), fit);
  const DeviceTimer* device = trainer.measured().device_timer.get();
  ASSERT_NE(device, nullptr);
  EXPECT_EQ(device->probes_made(), DeviceTimer::kProbes);  // the stream was held before each
  EXPECT_EQ(device->busy_ms().has_value(), device->probes_valid() > 0);
  RunFacts facts;
  facts.batch_size = 32;
  const RunSummary summary = summarize(trainer.measured(), facts);
  ASSERT_TRUE(summary.device_timing.has_value());
  EXPECT_EQ(summary.device_timing->probes_made, DeviceTimer::kProbes);
  EXPECT_EQ(summary.device_timing->idle_fraction.has_value(), device->probes_valid() > 0);
  if (summary.device_timing->idle_fraction) {
    EXPECT_GE(*summary.device_timing->idle_fraction, 0.0);
    EXPECT_LT(*summary.device_timing->idle_fraction, 1.0);
  }
}

TEST(Gpu, Bf16AutocastRunsTheForwardPassInBfloat16OnCudaAndHandsBackFloat32) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device here";
  torch::manual_seed(0);
  auto model = make_model(models::Mlp());
  model->to(torch::kCUDA);
  const at::Tensor x = torch::randn({64, 1, 28, 28}, torch::kCUDA);
  const at::Tensor exact = forward_in(*model, x, Precision::float32);
  const at::Tensor half = forward_in(*model, x, Precision::bfloat16);
  EXPECT_EQ(half.scalar_type(), at::kFloat);
  // bfloat16 keeps 8 bits of mantissa: the outputs differ from float32's, by about 1e-2 of their size
  const double error = (half - exact).norm().item<double>() / exact.norm().item<double>();
  EXPECT_GT(error, 1e-4);
  EXPECT_LT(error, 5e-2);
  TrainerOptions options;
  options.device = c10::Device(c10::kCUDA, 0);
  options.precision = Precision::bfloat16;
  Trainer trainer(models::Cnn(28, 1, 10), options);
  FitOptions fit;
  fit.loader.batch_size = 64;
  fit.epochs = 2;
  SyntheticOptions data;
  data.size = 3200;
  const History history = trainer.fit(make_synthetic(data), fit);
  const std::vector<double>& loss = history.at("loss");
  ASSERT_EQ(loss.size(), 2u);
  EXPECT_LT(loss[1], loss[0]);  // it learns
}

TEST(Gpu, NvmlReportsUtilizationAndMemoryOfTheGpu) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device here";
  GpuUsage usage(nvml_index_of(0, std::getenv("CUDA_VISIBLE_DEVICES")), std::chrono::milliseconds(10));
  const at::Tensor a = torch::randn({4096, 4096}, torch::kCUDA);
  at::Tensor b = a;
  for (int i = 0; i < 50; ++i) b = a.mm(b).div_(64);
  b.sum().item<float>();  // waits for the device
  const GpuUtilization u = usage.stop();
  ASSERT_TRUE(u.sampled) << u.why_not;
  EXPECT_GE(u.samples, 2);
  EXPECT_GT(u.memory_peak_mb, 64);  // the matrices at least
}

/// A world of one at a port of its own (`test`: one per test).
distributed::Environment world_of_one(int test) {
  distributed::Environment env;
  env.master_port = 31000 + 2 * (::getpid() % 1000) + test;
  return env;
}

TEST(Gpu, NcclCollectivesInAWorldOfOneWorkOnGpuAndCpuTensors) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device here";
  if (!distributed::nccl_available()) GTEST_SKIP() << "this build has no NCCL";
  auto context = distributed::make_nccl_context(world_of_one(0), 0, std::chrono::seconds(30));
  const at::Tensor gpu = torch::arange(6, torch::dtype(torch::kFloat).device(torch::kCUDA));
  auto pending = context->all_reduce_async(gpu);
  pending->wait();
  EXPECT_EQ(pending->completed_ns(), -1);  // only ordered on the stream
  EXPECT_TRUE(torch::equal(gpu.cpu(), torch::arange(6, torch::kFloat)));
  const at::Tensor cpu = torch::full({3}, 2.0f);
  auto on_host = context->all_reduce_async(cpu);
  on_host->wait();
  EXPECT_GT(on_host->completed_ns(), 0);
  EXPECT_TRUE(torch::equal(cpu, torch::full({3}, 2.0f)));
  context->broadcast(cpu, 0);
  const at::Tensor gathered = context->all_gather(cpu);
  EXPECT_EQ(gathered.sizes().vec(), (std::vector<int64_t>{1, 3}));
  EXPECT_FALSE(gathered.is_cuda());
  context->barrier();
}

TEST(Gpu, TheGradientReducerOnNcclLeavesTheLocalGradientsInAWorldOfOne) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device here";
  if (!distributed::nccl_available()) GTEST_SKIP() << "this build has no NCCL";
  auto context = distributed::make_nccl_context(world_of_one(1), 0, std::chrono::seconds(30));
  torch::manual_seed(0);
  torch::nn::Sequential net(torch::nn::Linear(8, 16), torch::nn::ReLU(), torch::nn::Linear(16, 4));
  net->to(torch::kCUDA);
  const at::Tensor x = torch::randn({32, 8}, torch::kCUDA);
  net->forward(x).pow(2).sum().backward();
  std::vector<at::Tensor> local;
  for (const auto& p : net->parameters()) {
    local.push_back(p.grad().clone());
    p.mutable_grad() = at::Tensor();
  }
  distributed::GradientReducerOptions options;
  options.bucket_cap_bytes = 0;  // one bucket per parameter: several collectives in flight
  distributed::GradientReducer reducer(context, net->parameters(), options);
  net->forward(x).pow(2).sum().backward();
  reducer.finish();
  EXPECT_EQ(reducer.communication_ns(), -1);
  for (std::size_t n = 0; n < local.size(); ++n) EXPECT_TRUE(torch::allclose(net->parameters()[n].grad(), local[n]));
}

TEST(Gpu, TheCliTrainsThroughNcclInAWorldOfOne) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device here";
  if (!distributed::nccl_available()) GTEST_SKIP() << "this build has no NCCL";
  const std::string dir = "/tmp/fitscope-gpu-nccl-" + std::to_string(::getpid());
  const std::string command = std::string("'") + FITSCOPE_CLI + "' launch --nproc-per-node 1 --master-port " +
                              std::to_string(33000 + ::getpid() % 2000) + " -- '" + FITSCOPE_CLI +
                              "' train --device cuda --dist-backend nccl --epochs 1 --synthetic-size 2000 --quiet --run-dir " +
                              dir + " > " + dir + ".log 2>&1";
  const int status = std::system(command.c_str());
  std::ifstream log(dir + ".log");
  const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  EXPECT_EQ(status, 0) << dir << ".log ends: " << text.substr(text.size() > 3000 ? text.size() - 3000 : 0);
}

/// The running loss at every batch end: a host read of the step's loss in on_train_batch_end.
class LossesSeen : public Callback {
 public:
  std::vector<double> losses;
  void on_train_batch_end(int64_t, Logs& logs) override { losses.push_back(logs.at("loss")); }
};

struct GraphRun {
  std::vector<double> losses;
  FitMeasurements measured;
  int64_t epochs = 0;
};

GraphRun graph_run(CudaGraphMode mode, std::shared_ptr<Model> model, int64_t examples, int64_t steps, int64_t epochs,
                   std::vector<std::shared_ptr<Callback>> more = {}) {
  TrainerOptions options;
  options.device = c10::Device(c10::kCUDA, 0);
  options.cuda_graph = mode;
  options.threads.intra_op = 1;  // no thread search: the trial starts after the 5 warm-up steps
  Trainer trainer(std::move(model), options);
  auto seen = std::make_shared<LossesSeen>();
  FitOptions fit;
  fit.loader.batch_size = 32;
  fit.loader.shuffle = false;
  fit.epochs = epochs;
  if (steps > 0) fit.steps_per_epoch = steps;
  fit.callbacks = std::move(more);
  fit.callbacks.push_back(seen);
  SyntheticOptions data;
  data.size = examples;
  const History history = trainer.fit(make_synthetic(data), fit);
  return {seen->losses, trainer.measured(), static_cast<int64_t>(history.epochs().size())};
}

std::shared_ptr<Model> seed_mlp() {
  torch::manual_seed(0);
  return make_model(models::Mlp());
}

TEST(GpuCudaGraph, TheSeedMlpAtBatch32ReplaysWithEagersLossesOverMoreThan100Steps) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device here";
  const GraphRun eager = graph_run(CudaGraphMode::off, seed_mlp(), 32 * 200, 0, 1);
  const GraphRun captured = graph_run(CudaGraphMode::on, seed_mlp(), 32 * 200, 0, 1);
  const CudaGraphOutcome& g = captured.measured.cuda_graph;
  ASSERT_TRUE(g.kept) << g.reason;
  EXPECT_GE(g.replayed_steps, 100);
  EXPECT_EQ(g.checked_steps, 2);
  ASSERT_EQ(captured.losses.size(), eager.losses.size());
  double worst = 0;
  for (std::size_t i = 0; i < eager.losses.size(); ++i) {
    worst = std::max(worst, std::abs(captured.losses[i] - eager.losses[i]) / std::abs(eager.losses[i]));
  }
  EXPECT_LE(worst, 1e-5) << "the running loss of a captured step differs from eager's";
  std::printf("captured against eager over %zu steps (%lld replayed): running loss within %.2e relative; %s\n",
              eager.losses.size(), static_cast<long long>(g.replayed_steps), worst, g.reason.c_str());
}

TEST(GpuCudaGraph, ReplayedStepsNeverSynchronise) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device here";
  TrainerOptions options;
  options.device = c10::Device(c10::kCUDA, 0);
  options.cuda_graph = CudaGraphMode::on;
  options.threads.intra_op = 1;  // no thread search: the trial starts after the 5 warm-up steps
  Trainer trainer(models::Mlp(), options);
  FitOptions fit;
  fit.loader.batch_size = 32;
  fit.steps_per_epoch = 120;
  fit.callbacks.push_back(std::make_shared<NoSyncBetween>(70, 110));  // after the trial (warm-up 5 + 53 steps)
  const std::string synchronised = fit_until_a_sync(trainer, fit);
  ASSERT_TRUE(synchronised.empty()) << "a replayed step synchronised with the GPU: " << synchronised;
  EXPECT_TRUE(trainer.measured().cuda_graph.kept) << trainer.measured().cuda_graph.reason;
  EXPECT_GT(trainer.measured().stats.phase(Phase::graph).mean_ms, 0);
}

/// The seed MLP with a host read of a device value in its forward pass: what cannot be captured.
struct HostReadImpl : torch::nn::Module {
  HostReadImpl() : dense(register_module("dense", torch::nn::Linear(784, 10))) {}
  at::Tensor forward(const at::Tensor& x) {
    const at::Tensor flat = x.flatten(1);
    return flat.abs().max().item<double>() > 1e30 ? dense(flat * 0) : dense(flat);
  }
  torch::nn::Linear dense;
};
TORCH_MODULE(HostRead);

TEST(GpuCudaGraph, AHostReadInTheForwardPassFallsBackToEagerWithTheReason) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device here";
  torch::manual_seed(0);
  const GraphRun run = graph_run(CudaGraphMode::on, make_model(HostRead()), 32 * 80, 0, 1);
  const CudaGraphOutcome& g = run.measured.cuda_graph;
  EXPECT_TRUE(g.tried);
  EXPECT_FALSE(g.kept);
  EXPECT_EQ(g.reason.rfind("the step could not be captured: ", 0), 0u) << g.reason;
  EXPECT_EQ(run.epochs, 1);  // the run finished, eagerly
  EXPECT_EQ(run.losses.size(), 80u);
  std::printf("%s\n", g.reason.c_str());
}

TEST(GpuCudaGraph, APartialLastBatchRunsEagerlyBesideTheReplays) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device here";
  const GraphRun run = graph_run(CudaGraphMode::on, seed_mlp(), 32 * 60 + 7, 0, 2);
  const CudaGraphOutcome& g = run.measured.cuda_graph;
  EXPECT_TRUE(g.kept) << g.reason;
  EXPECT_EQ(g.eager_steps, 2);  // each epoch's last batch (the trial ends at step 5 + 37 of the first's 61)
  EXPECT_EQ(run.epochs, 2);
}

}  // namespace
}  // namespace fitscope
