// GpuUsage against a stand-in NVML library (FAKE_NVML, built from fake_nvml.cpp): the figures it
// samples, and the reasons it gives when NVML is absent or fails.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "fitscope/fitscope.hpp"

namespace fitscope {
namespace {

TEST(GpuUsage, SamplesBusyShareAndPeakMemoryThroughNvmlLoadedAtRunTime) {
  GpuUsage usage(0, std::chrono::milliseconds(5), FAKE_NVML);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  const GpuUtilization u = usage.stop();
  ASSERT_TRUE(u.sampled) << u.why_not;
  EXPECT_GE(u.samples, 2);  // one at start, one at stop, the rest every 5 ms
  EXPECT_DOUBLE_EQ(u.busy_percent_mean, 40);
  EXPECT_DOUBLE_EQ(u.memory_peak_mb, 100.0 * static_cast<double>(u.samples));  // the last query's 100 MiB x n
  const GpuUtilization again = usage.stop();
  EXPECT_EQ(again.samples, u.samples);  // stopped: no more samples
}

TEST(GpuUsage, SaysWhyWhenNvmlIsAbsentOrFails) {
  const GpuUtilization absent = GpuUsage(0, std::chrono::milliseconds(5), "/no/such/libnvidia-ml.so.1").stop();
  EXPECT_FALSE(absent.sampled);
  EXPECT_EQ(absent.samples, 0);
  EXPECT_NE(absent.why_not.find("cannot load /no/such/libnvidia-ml.so.1"), std::string::npos) << absent.why_not;

  const GpuUtilization no_device = GpuUsage(3, std::chrono::milliseconds(5), FAKE_NVML).stop();
  EXPECT_FALSE(no_device.sampled);
  EXPECT_EQ(no_device.why_not, "nvmlDeviceGetHandleByIndex_v2(3) failed with NVML error 2");

  ::setenv("FAKE_NVML_INIT_ERROR", "9", 1);
  const GpuUtilization no_driver = GpuUsage(0, std::chrono::milliseconds(5), FAKE_NVML).stop();
  ::unsetenv("FAKE_NVML_INIT_ERROR");
  EXPECT_FALSE(no_driver.sampled);
  EXPECT_EQ(no_driver.why_not, "nvmlInit_v2 failed with NVML error 9");
}

TEST(GpuUsage, MapsCudaDevicesToNvmlIndicesThroughCudaVisibleDevices) {
  EXPECT_EQ(nvml_index_of(1, nullptr), 1);
  EXPECT_EQ(nvml_index_of(0, "3,1"), 3);
  EXPECT_EQ(nvml_index_of(1, "3,1"), 1);
  EXPECT_EQ(nvml_index_of(0, "GPU-5f2a"), 0);  // UUIDs: left as given
}

TEST(GpuUsage, SummaryReportsUtilizationAndPeakMemoryOrNull) {
  const FitMeasurements measured;
  RunFacts facts;
  auto summary = nlohmann::json::parse(summarize(measured, facts).to_json());
  EXPECT_TRUE(summary["gpu_utilization"].is_null());
  EXPECT_TRUE(summary["gpu_memory_peak_mb"].is_null());
  facts.gpu.sampled = true;
  facts.gpu.samples = 12;
  facts.gpu.busy_percent_mean = 87.5;
  facts.gpu.memory_peak_mb = 5120;
  summary = nlohmann::json::parse(summarize(measured, facts).to_json());
  EXPECT_DOUBLE_EQ(summary["gpu_utilization"].get<double>(), 87.5);
  EXPECT_DOUBLE_EQ(summary["gpu_memory_peak_mb"].get<double>(), 5120);
  EXPECT_EQ(summary["gpu_samples"], 12);
}

}  // namespace
}  // namespace fitscope
