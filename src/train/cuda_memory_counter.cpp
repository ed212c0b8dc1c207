// The CUDA caching allocator's MemoryCounter: compiled with CUDA code only where libtorch has CUDA
// (FITSCOPE_WITH_CUDA, set by src/CMakeLists.txt); elsewhere there is none.

#include "memory_counter.hpp"

#ifdef FITSCOPE_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace fitscope::detail {

#ifdef FITSCOPE_WITH_CUDA
namespace {

class CudaMemoryCounter final : public MemoryCounter {
 public:
  explicit CudaMemoryCounter(c10::DeviceIndex index) : index_(index) {}

  MemoryReading take() override {
    // the allocator's own statistics (no device call): allocated_bytes of all pools (StatType::AGGREGATE,
    // the first entry), as libtorch 2.x declares them in c10's CachingDeviceAllocator
    auto* allocator = c10::cuda::CUDACachingAllocator::get();
    const auto stats = allocator->getDeviceStats(index_);
    const auto& bytes = stats.allocated_bytes[0];
    allocator->resetPeakStats(index_);
    return {bytes.current, bytes.allocated, bytes.peak};
  }

 private:
  c10::DeviceIndex index_;
};

}  // namespace

std::unique_ptr<MemoryCounter> make_cuda_memory_counter(int64_t index) {
  return std::make_unique<CudaMemoryCounter>(static_cast<c10::DeviceIndex>(index));
}
#else
std::unique_ptr<MemoryCounter> make_cuda_memory_counter(int64_t) { return nullptr; }
#endif

}  // namespace fitscope::detail
