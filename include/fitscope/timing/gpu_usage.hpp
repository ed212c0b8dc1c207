#pragma once
/// GpuUsage: how busy a GPU was and how much of its memory was in use over a span of the run, sampled
/// on a background thread through NVML. NVML (`libnvidia-ml.so.1`, part of the NVIDIA driver) is
/// loaded at run time, so building needs neither it nor CUDA; where it cannot be loaded or does not
/// answer, the span reports why instead of figures.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace fitscope {

struct GpuUtilization {
  bool sampled = false;          ///< NVML answered; otherwise `why_not` says why
  std::string why_not;           ///< the library or call that failed, and its error
  int64_t samples = 0;           ///< NVML readings taken (one at start, one at stop, one per period)
  double busy_percent_mean = 0;  ///< mean over samples of the share of time a kernel ran (NVML's "gpu")
  double memory_peak_mb = 0;     ///< most device memory in use at a sample (every process's), MiB
};

/// NVML's index of CUDA device `cuda_index`: the `cuda_index`-th entry of CUDA_VISIBLE_DEVICES when it
/// lists indices (`visible_devices` is its value, null when unset), else `cuda_index`.
int64_t nvml_index_of(int64_t cuda_index, const char* visible_devices);

class GpuUsage {
 public:
  /// Starts sampling NVML device `nvml_index` every `period` through `library` (a name for dlopen or
  /// a path). Never throws for an absent or failing NVML: stop() then says why.
  explicit GpuUsage(int64_t nvml_index, std::chrono::milliseconds period = std::chrono::milliseconds(100),
                    std::string library = "libnvidia-ml.so.1");
  ~GpuUsage();
  GpuUsage(const GpuUsage&) = delete;
  GpuUsage& operator=(const GpuUsage&) = delete;

  /// Takes a last sample, stops the thread and returns the span's figures (idempotent).
  GpuUtilization stop();

 private:
  struct Nvml;
  void sample();  // with mutex_ held
  void run();

  std::unique_ptr<Nvml> nvml_;
  std::chrono::milliseconds period_;
  GpuUtilization result_;
  double busy_sum_ = 0;
  bool stopping_ = false;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::thread thread_;
};

}  // namespace fitscope
