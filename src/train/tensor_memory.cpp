#include "tensor_memory.hpp"

#include "memory_counter.hpp"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>
#include <torch/version.h>

#include <mutex>

namespace fitscope::detail {

namespace {

constexpr std::size_t kHeader = 64;  // keeps the block's alignment (c10's is 64 bytes)

TensorMemory counters;

void free_counted(void* data) {
  if (!data) return;
  void* base = static_cast<char*>(data) - kHeader;
  const auto bytes = static_cast<int64_t>(*static_cast<std::size_t*>(base));
  const int64_t live = counters.live.fetch_sub(bytes, std::memory_order_relaxed) - bytes;
  if (c10::memoryProfilingEnabled()) c10::reportMemoryUsageToProfiler(data, -bytes, live, 0, c10::Device(c10::DeviceType::CPU));
  c10::free_cpu(base);
}

class CountingCpuAllocator final : public c10::Allocator {
 public:
  // the data pointer is its own context (raw_allocate, which oneDNN's scratch memory uses, needs that)
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
  c10::DataPtr allocate(std::size_t bytes) override { return counted(bytes); }
  void copy_data(void* dest, const void* src, std::size_t count) const override { default_copy_data(dest, src, count); }
#else
  c10::DataPtr allocate(std::size_t bytes) const override { return counted(bytes); }
#endif
  c10::DeleterFnPtr raw_deleter() const override { return &free_counted; }

 private:
  static c10::DataPtr counted(std::size_t bytes) {
    const c10::Device cpu(c10::DeviceType::CPU);
    if (bytes == 0) return {nullptr, nullptr, &free_counted, cpu};
    void* base = c10::alloc_cpu(bytes + kHeader);
    *static_cast<std::size_t*>(base) = bytes;
    void* data = static_cast<char*>(base) + kHeader;
    const auto n = static_cast<int64_t>(bytes);
    const int64_t live = counters.live.fetch_add(n, std::memory_order_relaxed) + n;
    counters.allocated.fetch_add(n, std::memory_order_relaxed);
    for (int64_t peak = counters.peak.load(std::memory_order_relaxed);
         live > peak && !counters.peak.compare_exchange_weak(peak, live, std::memory_order_relaxed);) {
    }
    if (c10::memoryProfilingEnabled()) c10::reportMemoryUsageToProfiler(data, n, live, 0, cpu);
    return {data, data, &free_counted, cpu};
  }
};


/// The counting allocator's figures as a MemoryCounter.
class CpuMemoryCounter final : public MemoryCounter {
 public:
  CpuMemoryCounter() : memory_(tensor_memory()) {}
  MemoryReading take() override {
    const int64_t peak = memory_.take_peak();
    return {memory_.live.load(std::memory_order_relaxed), memory_.allocated.load(std::memory_order_relaxed), peak};
  }

 private:
  TensorMemory& memory_;
};

}  // namespace

std::unique_ptr<MemoryCounter> cpu_memory_counter() { return std::make_unique<CpuMemoryCounter>(); }

TensorMemory& tensor_memory() {
  static std::once_flag installed;
  std::call_once(installed, [] {
    static CountingCpuAllocator allocator;
    c10::SetCPUAllocator(&allocator, /*priority=*/1);  // above libtorch's own (0)
  });
  return counters;
}

}  // namespace fitscope::detail
