#pragma once
// The bytes of CPU tensor memory this process holds, counted as libtorch allocates and frees them: a
// CPU allocator (c10::SetCPUAllocator) that takes each block from c10's own (alloc_cpu, 64-byte
// aligned) with a 64-byte header holding its size, and counts on every thread at the cost of two
// atomic operations a block. It reports each block to c10's memory-reporting hook
// (c10::reportMemoryUsageToProfiler) as libtorch's allocator does, so torch.profiler's memory view
// still sees them. Installed once per process, at the first fit that tracks memory; a block allocated
// before is freed by its own allocator and not counted.

#include <atomic>
#include <cstdint>

namespace fitscope::detail {

struct TensorMemory {
  std::atomic<int64_t> live{0};       ///< bytes held now
  std::atomic<int64_t> peak{0};       ///< the most held since the last take_peak()
  std::atomic<int64_t> allocated{0};  ///< bytes allocated in all

  /// The peak since the last call; the next one starts from what is held now.
  int64_t take_peak() { return peak.exchange(live.load(std::memory_order_relaxed), std::memory_order_relaxed); }
};

/// The counters, installing the counting allocator on first use.
TensorMemory& tensor_memory();

}  // namespace fitscope::detail
