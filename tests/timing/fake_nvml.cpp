// A stand-in for libnvidia-ml.so.1 with NVML's C interface, for testing GpuUsage without a GPU: the
// device is 40 % busy, and each memory query reports 100 MiB more in use than the one before.
// FAKE_NVML_INIT_ERROR=N makes nvmlInit_v2 fail with NVML error N.

#include <cstdlib>

namespace {
int memory_queries = 0;
int device_tag = 0;
}  // namespace

extern "C" {

struct FakeUtilization {
  unsigned int gpu;
  unsigned int memory;
};
struct FakeMemory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

int nvmlInit_v2() {
  const char* error = std::getenv("FAKE_NVML_INIT_ERROR");
  return error ? std::atoi(error) : 0;
}
int nvmlShutdown() { return 0; }
int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void** device) {
  if (index > 0) return 2;  // NVML_ERROR_INVALID_ARGUMENT: one device
  *device = &device_tag;
  return 0;
}
int nvmlDeviceGetUtilizationRates(void* device, FakeUtilization* rates) {
  if (device != &device_tag) return 2;
  rates->gpu = 40;
  rates->memory = 10;
  return 0;
}
int nvmlDeviceGetMemoryInfo(void* device, FakeMemory* memory) {
  if (device != &device_tag) return 2;
  ++memory_queries;
  memory->total = 80ull << 30;
  memory->used = static_cast<unsigned long long>(memory_queries) * (100ull << 20);
  memory->free = memory->total - memory->used;
  return 0;
}
}
