// The CUDA event source of DeviceTimer: compiled with CUDA code only where libtorch has CUDA
// (FITSCOPE_WITH_CUDA, set by src/CMakeLists.txt); elsewhere there is no such source.

#include "fitscope/timing/device_timer.hpp"

#ifdef FITSCOPE_WITH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/Sleep.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include <vector>

namespace fitscope {

#ifdef FITSCOPE_WITH_CUDA
namespace {

class CudaEvent final : public DeviceEvent {
 public:
  at::cuda::CUDAEvent event{cudaEventDefault};  // with timing (the default constructor turns it off)
};

const at::cuda::CUDAEvent& cuda(const DeviceEvent& e) { return static_cast<const CudaEvent&>(e).event; }

class CudaEventSource final : public DeviceEventSource {
 public:
  explicit CudaEventSource(c10::DeviceIndex index) : index_(index) {}

  std::unique_ptr<DeviceEvent> record() override {
    std::unique_ptr<DeviceEvent> e;
    if (free_.empty()) {
      e = std::make_unique<CudaEvent>();
    } else {  // an event already read: recording it again saves creating and destroying one per boundary
      e = std::move(free_.back());
      free_.pop_back();
    }
    static_cast<CudaEvent&>(*e).event.record(c10::cuda::getCurrentCUDAStream(index_));
    return e;
  }
  void release(std::unique_ptr<DeviceEvent> e) override { free_.push_back(std::move(e)); }
  bool done(const DeviceEvent& e) override { return cuda(e).query(); }
  void wait(const DeviceEvent& e) override { cuda(e).synchronize(); }
  double elapsed_ms(const DeviceEvent& from, const DeviceEvent& to) override { return cuda(from).elapsed_time(cuda(to)); }
  bool hold(double ms) override {
    // a kernel that spins for the cycles of `ms` at 2 GHz, on the current stream: at least `ms` on any
    // clock up to 2 GHz (datacenter GPUs boost to under 2 GHz), longer on a slower one
    const c10::cuda::CUDAGuard guard(index_);
    at::cuda::sleep(static_cast<int64_t>(ms * 2e6));
    return true;
  }

 private:
  c10::DeviceIndex index_;
  std::vector<std::unique_ptr<DeviceEvent>> free_;
};

}  // namespace

std::unique_ptr<DeviceEventSource> make_cuda_event_source(int64_t index) {
  return std::make_unique<CudaEventSource>(static_cast<c10::DeviceIndex>(index));
}
#else
std::unique_ptr<DeviceEventSource> make_cuda_event_source(int64_t) { return nullptr; }
#endif

}  // namespace fitscope
