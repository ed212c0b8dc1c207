// The GPU path, built only where libtorch has CUDA and run on a machine with a GPU (ctest -L gpu):
// no host synchronisation in the loop's steady state (CUDA's sync debug mode turns any into an
// error), the phases timed by CUDA events, and NVML's utilization sampling.

#include <c10/cuda/CUDAFunctions.h>
#include <torch/torch.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "fitscope/fitscope.hpp"

namespace fitscope {
namespace {

/// Turns CUDA's sync debug mode to "error" for batches [from, to): a synchronising call there throws.
class NoSyncBetween : public Callback {
 public:
  NoSyncBetween(int64_t from, int64_t to) : from_(from), to_(to) {}
  bool reads_batch_logs() const override { return false; }
  void on_train_batch_begin(int64_t batch, const Logs&) override {
    if (batch == from_) c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_ERROR);
  }
  void on_train_batch_end(int64_t batch, const Logs&) override {
    if (batch + 1 == to_) c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_DISABLED);
  }

 private:
  int64_t from_, to_;
};

TEST(Gpu, TheSteadyStateLoopNeverSynchronisesAndEventsTimeTheDevicePhases) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device here";
  torch::manual_seed(0);
  TrainerOptions options;
  options.device = c10::Device(c10::kCUDA, 0);
  Trainer trainer(models::Cnn(28, 1, 10), options);
  FitOptions fit;
  fit.batch_size = 64;
  fit.steps_per_epoch = 60;
  fit.callbacks.push_back(std::make_shared<NoSyncBetween>(10, 50));  // the epoch's logs come after
  SyntheticOptions data;
  data.size = 4000;
  try {
    trainer.fit(make_synthetic(data), fit);
  } catch (const std::exception& e) {
    c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_DISABLED);
    FAIL() << "the loop synchronised with the GPU in its steady state: " << e.what();
  }
  const DeviceTimer* device = trainer.device_timer();
  ASSERT_NE(device, nullptr);
  EXPECT_EQ(device->stats().steps(), 60);
  EXPECT_GT(device->resolved_in_loop(), 0);  // resolved lazily, without waiting
  const std::vector<Phase> measured = device->measured_phases();
  for (Phase p : {Phase::h2d, Phase::forward, Phase::backward, Phase::optimizer, Phase::metrics}) {
    EXPECT_NE(std::find(measured.begin(), measured.end(), p), measured.end()) << phase_name(p);
  }
  EXPECT_GT(device->stats().phase(Phase::backward).mean_ms, 0);
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

}  // namespace
}  // namespace fitscope
