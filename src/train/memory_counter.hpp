#pragma once
// MemoryCounter: what MemoryListener reads at each phase boundary of a step, one reading at a time:
// the bytes of tensors held now, the bytes allocated in all so far, and the most held since the last
// reading (the next reading's peak starts from what is held now). On a CPU the counting allocator's
// figures (tensor_memory.hpp); on a GPU the CUDA caching allocator's statistics of one device
// (allocated_bytes, all pools): what torch.cuda.memory_allocated and max_memory_allocated report. A
// reading of the caching allocator resets its peak statistics (torch.cuda.reset_peak_memory_stats),
// so a user's own max_memory_allocated after a fit that counted memory is that of its last phase.

#include <cstdint>
#include <memory>

namespace fitscope::detail {

struct MemoryReading {
  int64_t live = 0, allocated = 0, peak = 0;
};

class MemoryCounter {
 public:
  virtual ~MemoryCounter() = default;
  virtual MemoryReading take() = 0;
};

/// The counting CPU allocator's (installing it on first use).
std::unique_ptr<MemoryCounter> cpu_memory_counter();
/// The CUDA caching allocator's of device `index`; null where this libtorch has no CUDA.
std::unique_ptr<MemoryCounter> make_cuda_memory_counter(int64_t index);

}  // namespace fitscope::detail
