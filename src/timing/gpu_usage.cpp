#include "fitscope/timing/gpu_usage.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <vector>

namespace fitscope {

int64_t nvml_index_of(int64_t cuda_index, const char* visible_devices) {
  if (!visible_devices) return cuda_index;
  std::vector<int64_t> listed;
  std::istringstream in(visible_devices);
  for (std::string entry; std::getline(in, entry, ',');) {
    char* end = nullptr;
    const long long index = std::strtoll(entry.c_str(), &end, 10);
    if (entry.empty() || *end != '\0' || index < 0) return cuda_index;  // UUIDs or MIG names: as given
    listed.push_back(index);
  }
  return cuda_index < static_cast<int64_t>(listed.size()) ? listed[static_cast<std::size_t>(cuda_index)] : cuda_index;
}

struct GpuUsage::Nvml {
  // NVML's C interface, as nvml.h declares it (return 0 is NVML_SUCCESS)
  using NvmlDevice = void*;
  struct NvmlUtilizationRates {
    unsigned int gpu;
    unsigned int memory;
  };
  struct NvmlMemory {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
  };
  using InitFn = int (*)();
  using ShutdownFn = int (*)();
  using HandleByIndexFn = int (*)(unsigned int, NvmlDevice*);
  using UtilizationFn = int (*)(NvmlDevice, NvmlUtilizationRates*);
  using MemoryFn = int (*)(NvmlDevice, NvmlMemory*);

  void* library = nullptr;
  ShutdownFn shutdown = nullptr;
  UtilizationFn utilization = nullptr;
  MemoryFn memory = nullptr;
  NvmlDevice device = nullptr;
  bool initialised = false;

  /// Empty when NVML is ready, else why not.
  std::string open(const std::string& name, int64_t index) {
    library = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!library) {
      const char* error = ::dlerror();
      return "cannot load " + name + ": " + (error ? error : "unknown error");
    }
    auto symbol = [&](const char* what) { return ::dlsym(library, what); };
    const auto init = reinterpret_cast<InitFn>(symbol("nvmlInit_v2"));
    shutdown = reinterpret_cast<ShutdownFn>(symbol("nvmlShutdown"));
    const auto by_index = reinterpret_cast<HandleByIndexFn>(symbol("nvmlDeviceGetHandleByIndex_v2"));
    utilization = reinterpret_cast<UtilizationFn>(symbol("nvmlDeviceGetUtilizationRates"));
    memory = reinterpret_cast<MemoryFn>(symbol("nvmlDeviceGetMemoryInfo"));
    if (!init || !shutdown || !by_index || !utilization || !memory) {
      return name + " lacks an NVML function (nvmlInit_v2, nvmlShutdown, nvmlDeviceGetHandleByIndex_v2, "
                    "nvmlDeviceGetUtilizationRates, nvmlDeviceGetMemoryInfo)";
    }
    if (const int rc = init(); rc != 0) return "nvmlInit_v2 failed with NVML error " + std::to_string(rc);
    initialised = true;
    if (const int rc = by_index(static_cast<unsigned int>(index), &device); rc != 0) {
      return "nvmlDeviceGetHandleByIndex_v2(" + std::to_string(index) + ") failed with NVML error " + std::to_string(rc);
    }
    return {};
  }

  ~Nvml() {
    if (initialised) shutdown();
    if (library) ::dlclose(library);
  }
};

GpuUsage::GpuUsage(int64_t nvml_index, std::chrono::milliseconds period, std::string library)
    : nvml_(std::make_unique<Nvml>()), period_(std::max(period, std::chrono::milliseconds(1))) {
  result_.why_not = nvml_->open(library, nvml_index);
  if (!result_.why_not.empty()) return;
  result_.sampled = true;
  std::lock_guard<std::mutex> lock(mutex_);
  sample();
  thread_ = std::thread([this] { run(); });
}

GpuUsage::~GpuUsage() { stop(); }

void GpuUsage::sample() {
  Nvml::NvmlUtilizationRates rates{};
  Nvml::NvmlMemory memory{};
  const char* failed = nullptr;
  int rc = nvml_->utilization(nvml_->device, &rates);
  if (rc != 0) {
    failed = "nvmlDeviceGetUtilizationRates";
  } else if ((rc = nvml_->memory(nvml_->device, &memory)) != 0) {
    failed = "nvmlDeviceGetMemoryInfo";
  }
  if (failed) {  // no figures from a span NVML stopped answering in
    result_ = GpuUtilization{};
    result_.why_not = std::string(failed) + " failed with NVML error " + std::to_string(rc);
    stopping_ = true;
    return;
  }
  ++result_.samples;
  busy_sum_ += rates.gpu;
  result_.busy_percent_mean = busy_sum_ / static_cast<double>(result_.samples);
  result_.memory_peak_mb = std::max(result_.memory_peak_mb, static_cast<double>(memory.used) / (1024.0 * 1024.0));
}

void GpuUsage::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    if (!wake_.wait_for(lock, period_, [this] { return stopping_; })) sample();
  }
}

GpuUtilization GpuUsage::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (thread_.joinable() && !stopping_) sample();
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  return result_;
}

}  // namespace fitscope
