#include "fitscope/train/measure_peak.hpp"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/version.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>

#include "fitscope/io/atomic_file.hpp"
#include "fitscope/threads/blas_library.hpp"
#include "fitscope/timing/device_timer.hpp"

namespace fitscope {

namespace {

constexpr int64_t kGemm = 1024;           // n of the n x n x n product: 2.1 GFLOP
constexpr int64_t kCopyFloats = 16 << 20;  // 64 MiB
constexpr int kRounds = 5;
constexpr int64_t kDeviceGemm = 4096;  // 137 GFLOP: milliseconds on a GPU

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "an unnamed CPU";
}

std::string host_name() {
  char name[256] = {};
  return gethostname(name, sizeof name - 1) == 0 ? std::string(name) : std::string("this host");
}

/// The fastest of kRounds runs of `work`, after one that warms it up, in seconds.
template <typename Work>
double best_seconds(Work work) {
  work();
  double best = 1e30;
  for (int i = 0; i < kRounds; ++i) {
    const auto start = std::chrono::steady_clock::now();
    work();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

/// The fastest of kRounds runs of `work` on the device of `events`, after one that warms it up, in
/// seconds: from an event before it to one after, on the current stream.
template <typename Work>
double best_device_seconds(DeviceEventSource& events, Work work) {
  work();
  double best = 1e30;
  for (int i = 0; i < kRounds; ++i) {
    const auto from = events.record();
    work();
    const auto to = events.record();
    events.wait(*to);
    best = std::min(best, events.elapsed_ms(*from, *to) * 1e-3);
  }
  return best;
}

MachinePeak measure_cuda(int64_t index) {
  std::unique_ptr<DeviceEventSource> events = make_cuda_event_source(index);
  if (!events) throw std::runtime_error("this libtorch has no CUDA: no GPU peak to measure");
  const auto on = at::TensorOptions().device(at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(index)));
  MachinePeak p;
  const at::Tensor a = at::randn({kDeviceGemm, kDeviceGemm}, on), b = at::randn({kDeviceGemm, kDeviceGemm}, on);
  at::Tensor c = at::empty({kDeviceGemm, kDeviceGemm}, on);
  const double s = best_device_seconds(*events, [&] { at::mm_out(c, a, b); });
  p.gemm_gflops = 2.0 * static_cast<double>(kDeviceGemm * kDeviceGemm * kDeviceGemm) / s * 1e-9;
  const at::Tensor from = at::ones({kCopyFloats}, on);
  at::Tensor to = at::empty_like(from);
  const double t = best_device_seconds(*events, [&] { to.copy_(from); });
  p.memory_gbps = 2.0 * static_cast<double>(kCopyFloats) * sizeof(float) / t * 1e-9;
  p.device = "cuda:" + std::to_string(index);
  return p;
}

MachinePeak measure(int64_t cores) {
  MachinePeak p;
  const int intra_op = at::get_num_threads();
  const BlasLibrary& blas = loaded_blas();
  const int64_t blas_threads = blas.threads();
  at::set_num_threads(static_cast<int>(cores));
  blas.set_threads(cores);
  {
    const at::Tensor a = at::randn({kGemm, kGemm}), b = at::randn({kGemm, kGemm});
    at::Tensor c = at::empty({kGemm, kGemm});
    const double s = best_seconds([&] { at::mm_out(c, a, b); });
    p.gemm_gflops = 2.0 * static_cast<double>(kGemm * kGemm * kGemm) / s * 1e-9;
    const at::Tensor from = at::ones({kCopyFloats});
    at::Tensor to = at::empty_like(from);
    const double t = best_seconds([&] { to.copy_(from); });
    p.memory_gbps = 2.0 * static_cast<double>(kCopyFloats) * sizeof(float) / t * 1e-9;
  }
  at::set_num_threads(intra_op);
  blas.set_threads(blas_threads);
  return p;
}

std::mutex peaks_mutex;
std::map<std::string, MachinePeak> peaks_here;  // measured or read by this process, by cache file and key

}  // namespace

std::string default_peak_cache_dir() {
  if (const char* dir = std::getenv("FITSCOPE_CACHE_DIR"); dir && *dir) return dir;
  if (const char* dir = std::getenv("XDG_CACHE_HOME"); dir && *dir) return std::string(dir) + "/fitscope";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/fitscope";
  return {};
}

namespace {

/// The peak kept in `cache_dir` under `key`, or `measure()`d and kept there.
template <typename Measure>
MachinePeak cached_peak(const std::string& key, const std::string& cache_dir, int64_t cores, const std::string& device, Measure measure) {
  const std::string path = cache_dir.empty() ? std::string() : cache_dir + "/machine_peak.json";
  const std::lock_guard<std::mutex> lock(peaks_mutex);
  const std::string here_key = path + "\n" + key;
  if (const auto here = peaks_here.find(here_key); here != peaks_here.end() && !path.empty()) return here->second;
  nlohmann::json cache = nlohmann::json::object();
  if (!path.empty()) {
    try {  // a cache that is missing or unreadable is measured anew and written again
      std::ifstream in(path);
      if (in) cache = nlohmann::json::parse(in);
      if (!cache.is_object()) cache = nlohmann::json::object();
      if (const auto at = cache.find(key); at != cache.end()) {
        MachinePeak p;
        p.gemm_gflops = at->at("gemm_gflops").get<double>();
        p.memory_gbps = at->at("memory_gbps").get<double>();
        p.cores = cores;
        p.device = device;
        p.key = key;
        p.cached = true;
        if (p.gemm_gflops > 0 && p.memory_gbps > 0) return peaks_here[here_key] = p;
      }
    } catch (const std::exception&) {
      cache = nlohmann::json::object();
    }
  }
  MachinePeak p = measure();
  p.cores = cores;
  p.device = device;
  p.key = key;
  peaks_here[here_key] = p;
  if (!path.empty()) {
    try {
      std::filesystem::create_directories(cache_dir);
      cache[key] = {{"gemm_gflops", p.gemm_gflops}, {"memory_gbps", p.memory_gbps}};
      write_file_atomically(path, cache.dump(2) + "\n");
    } catch (const std::exception&) {
      // kept for this process only: the next process measures again
    }
  }
  return p;
}

}  // namespace

MachinePeak measure_machine_peak(int64_t cores, const std::string& cache_dir) {
  cores = std::max<int64_t>(cores, 1);
  const std::string key = host_name() + " | " + cpu_model() + " | " + std::to_string(cores) + (cores == 1 ? " core" : " cores") +
                          " | libtorch " + TORCH_VERSION + " | " + loaded_blas().name();
  return cached_peak(key, cache_dir, cores, "cpu", [cores] { return measure(cores); });
}

MachinePeak measure_cuda_peak(int64_t index, const std::string& cache_dir) {
  const std::string device = "cuda:" + std::to_string(index);
  const std::string key = host_name() + " | " + device + " | libtorch " + TORCH_VERSION + " | float32, TF32 " +
                          (at::globalContext().allowTF32CuBLAS() ? "on" : "off");
  return cached_peak(key, cache_dir, 0, device, [index] { return measure_cuda(index); });
}

}  // namespace fitscope
