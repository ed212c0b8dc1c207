// The CUDA-graph StepCapture: compiled with CUDA code only where libtorch has CUDA (FITSCOPE_WITH_CUDA,
// set by src/CMakeLists.txt); elsewhere there is none.

#include "fitscope/train/step_capture.hpp"

#ifdef FITSCOPE_WITH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <torch/cuda.h>

#include <stdexcept>
#include <string>
#endif

namespace fitscope {

#ifdef FITSCOPE_WITH_CUDA
namespace {

class CudaStepCapture final : public StepCapture {
 public:
  explicit CudaStepCapture(c10::DeviceIndex index)
      : index_(index), stream_(c10::cuda::getStreamFromPool(/*isHighPriority=*/false, index)) {}

  void synchronize() override { torch::cuda::synchronize(index_); }

  void run_on_capture_stream(const std::function<void()>& work) override {
    const c10::cuda::CUDAGuard device(index_);
    const c10::cuda::CUDAStream current = c10::cuda::getCurrentCUDAStream(index_);
    at::cuda::CUDAEvent ready;
    ready.record(current);
    ready.block(stream_);
    {
      const c10::cuda::CUDAStreamGuard on_capture_stream(stream_);
      work();
    }
    at::cuda::CUDAEvent done;
    done.record(stream_);
    done.block(current);
  }

  void capture(const std::function<void()>& step) override {
    const c10::cuda::CUDAGuard device(index_);
    synchronize();  // the capture stream starts from a device with nothing queued
    graph_ = std::make_unique<at::cuda::CUDAGraph>();
    std::string failure;
    {
      const c10::cuda::CUDAStreamGuard on_capture_stream(stream_);
      // thread-local: another thread's CUDA calls (the loader pinning memory) go on meanwhile
      graph_->capture_begin({0, 0}, cudaStreamCaptureModeThreadLocal);
      try {
        step();
      } catch (const std::exception& e) {
        failure = e.what();
      }
      try {
        graph_->capture_end();
      } catch (const std::exception& e) {
        if (failure.empty()) failure = e.what();
      }
    }
    if (failure.empty()) return;
    // a capture that failed: the stream leaves capture mode, the error is cleared, and the graph is
    // dropped without destroying what it half holds
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(stream_.stream(), &status) == cudaSuccess && status != cudaStreamCaptureStatusNone) {
      cudaGraph_t unfinished = nullptr;
      if (cudaStreamEndCapture(stream_.stream(), &unfinished) == cudaSuccess && unfinished) cudaGraphDestroy(unfinished);
    }
    (void)cudaGetLastError();
    (void)graph_.release();
    throw std::runtime_error(failure);
  }

  void replay() override { graph_->replay(); }

 private:
  c10::DeviceIndex index_;
  c10::cuda::CUDAStream stream_;
  std::unique_ptr<at::cuda::CUDAGraph> graph_;
};

}  // namespace

std::unique_ptr<StepCapture> make_cuda_step_capture(const c10::Device& device) {
  if (!device.is_cuda()) return nullptr;
  return std::make_unique<CudaStepCapture>(device.has_index() ? device.index() : c10::cuda::current_device());
}
#else
std::unique_ptr<StepCapture> make_cuda_step_capture(const c10::Device&) { return nullptr; }
#endif

}  // namespace fitscope
