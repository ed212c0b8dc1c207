// The NCCL context: compiled with NCCL only where libtorch has CUDA and NCCL's header was found
// (FITSCOPE_WITH_NCCL, set by src/CMakeLists.txt); elsewhere make_nccl_context says so.

#include "fitscope/distributed/nccl_context.hpp"

#include <stdexcept>
#include <string>

#ifdef FITSCOPE_WITH_NCCL
#ifndef USE_C10D_NCCL  // ProcessGroupNCCL.hpp declares nothing without it
#define USE_C10D_NCCL
#endif
#include <ATen/ATen.h>
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

#include <thread>
#include <vector>

#include "fitscope/timing/step_clock.hpp"
#include "rendezvous.hpp"
#endif

namespace fitscope::distributed {

#ifdef FITSCOPE_WITH_NCCL
namespace {

class NcclContext;

/// A collective in flight on `staged` (a CUDA tensor). `host`, when defined, is the CPU tensor it
/// stands for: wait() blocks until the result is back in it.
class NcclPending final : public PendingCollective {
 public:
  NcclPending(NcclContext& context, c10::intrusive_ptr<c10d::Work> work, at::Tensor staged, at::Tensor host,
              const char* what)
      : context_(context), work_(std::move(work)), staged_(std::move(staged)), host_(std::move(host)), what_(what) {}
  void wait() override;
  int64_t completed_ns() const override { return completed_ns_; }

 private:
  NcclContext& context_;
  c10::intrusive_ptr<c10d::Work> work_;
  at::Tensor staged_, host_;
  const char* what_;
  int64_t completed_ns_ = -1;
};

class NcclContext final : public detail::C10dContext {
 public:
  NcclContext(const Environment& env, int64_t device_index, std::chrono::milliseconds timeout)
      : C10dContext(env, timeout, ""), device_(c10::kCUDA, static_cast<c10::DeviceIndex>(device_index)) {
    try {
      c10::cuda::set_device(device_.index());
      auto options = c10d::ProcessGroupNCCL::Options::create();
      options->timeout = 2 * timeout;  // the watchdog's: ours names the silent rank first
      group_ = c10::make_intrusive<c10d::ProcessGroupNCCL>(rendezvous_.store("fitscope/nccl"), static_cast<int>(env.rank),
                                                           static_cast<int>(env.world_size), options);
    } catch (const std::exception& e) {
      rendezvous_.setup_failed(e);
    }
  }

  std::unique_ptr<PendingCollective> all_reduce_async(const at::Tensor& tensor) override {
    std::vector<at::Tensor> tensors{staged(tensor)};
    auto work = run("all_reduce", [&] { return group_->allreduce(tensors); });
    return std::make_unique<NcclPending>(*this, std::move(work), tensors[0], tensor.is_cuda() ? at::Tensor() : tensor,
                                         "all_reduce");
  }

  void broadcast(const at::Tensor& tensor, int64_t root) override {
    std::vector<at::Tensor> tensors{staged(tensor)};
    c10d::BroadcastOptions options;
    options.rootRank = root;
    NcclPending(*this, run("broadcast", [&] { return group_->broadcast(tensors, options); }), tensors[0],
                tensor.is_cuda() ? at::Tensor() : tensor, "broadcast")
        .wait();
  }

  at::Tensor all_gather(const at::Tensor& tensor) override {
    std::vector<at::Tensor> inputs{staged(tensor).contiguous()};
    std::vector<std::vector<at::Tensor>> outputs(1);
    for (int64_t r = 0; r < world_size(); ++r) outputs[0].push_back(at::empty_like(inputs[0]));
    finish_on_host(run("all_gather", [&] { return group_->allgather(outputs, inputs); }), "all_gather");
    at::Tensor all = at::stack(outputs[0]);
    return tensor.is_cuda() ? all : all.to(at::kCPU);
  }

  void barrier() override { all_reduce(at::zeros({1})); }  // a CPU tensor: returns when every rank took part

  /// Blocks until `work` is done on the GPU; after the timeout, or when NCCL failed, a PeerFailure
  /// names the silent ranks.
  void finish_on_host(const c10::intrusive_ptr<c10d::Work>& work, const char* what) {
    const auto deadline = std::chrono::steady_clock::now() + rendezvous_.timeout();
    run(what, [&] {
      while (!work->isCompleted()) {
        if (std::chrono::steady_clock::now() > deadline) {
          throw std::runtime_error("the collective did not complete on the GPU within the timeout");
        }
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
      if (work->exception()) std::rethrow_exception(work->exception());
      work->wait();
    });
  }

  /// Orders the current stream after `work` (the host goes on).
  void order_stream(const c10::intrusive_ptr<c10d::Work>& work, const char* what) {
    run(what, [&] { work->wait(); });
  }

 private:
  at::Tensor staged(const at::Tensor& tensor) const { return tensor.is_cuda() ? tensor : tensor.to(device_); }

  c10::Device device_;
  c10::intrusive_ptr<c10d::ProcessGroupNCCL> group_;
};

void NcclPending::wait() {
  if (!host_.defined()) {
    context_.order_stream(work_, what_);
    return;
  }
  context_.finish_on_host(work_, what_);
  host_.copy_(staged_);
  completed_ns_ = StepClock::now_ns();
}

}  // namespace

bool nccl_available() { return true; }

std::shared_ptr<Context> make_nccl_context(const Environment& env, int64_t device_index, std::chrono::milliseconds timeout) {
  return std::make_shared<NcclContext>(env, device_index, timeout);
}
#else
bool nccl_available() { return false; }

std::shared_ptr<Context> make_nccl_context(const Environment&, int64_t, std::chrono::milliseconds) {
  throw std::invalid_argument(
      "the NCCL backend is not in this build of fitscope: it needs a libtorch with CUDA and NCCL (expected gloo)");
}
#endif

}  // namespace fitscope::distributed
