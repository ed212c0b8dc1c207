// The Gloo context: compiled where gloo's headers are found (FITSCOPE_WITH_GLOO, set by
// src/CMakeLists.txt: always on a CPU build; a PyTorch wheel may lack them).
#include "fitscope/distributed/gloo_context.hpp"

#include <stdexcept>

#ifdef FITSCOPE_WITH_GLOO
#ifndef USE_C10D_GLOO  // ProcessGroupGloo.hpp declares nothing without it (Torch's config usually sets it)
#define USE_C10D_GLOO
#endif
#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include <atomic>
#include <thread>
#include <vector>

#include "fitscope/threads/thread_names.hpp"
#include "fitscope/threads/thread_policy.hpp"
#include "fitscope/timing/step_clock.hpp"
#include "rendezvous.hpp"
#endif

namespace fitscope::distributed {
#ifdef FITSCOPE_WITH_GLOO
namespace {

class GlooContext;

class GlooPending final : public PendingCollective {
 public:
  GlooPending(GlooContext& context, std::vector<at::Tensor> tensors, c10::intrusive_ptr<c10d::Work> work,
              const char* what);
  void wait() override;
  int64_t completed_ns() const override { return completed_ns_->load(); }

 private:
  GlooContext& context_;
  std::vector<at::Tensor> tensors_;  // kept alive while gloo works on them
  c10::intrusive_ptr<c10d::Work> work_;
  const char* what_;
  std::shared_ptr<std::atomic<int64_t>> completed_ns_ = std::make_shared<std::atomic<int64_t>>(0);
};

class GlooContext final : public detail::C10dContext {
 public:
  GlooContext(const Environment& env, std::chrono::milliseconds timeout, std::chrono::microseconds poll)
      : C10dContext(env, timeout, local_address_towards(env.master_addr)), poll_ns_(poll.count() * 1000) {
    try {
      auto options = c10d::ProcessGroupGloo::Options::create(timeout);
      options->threads = static_cast<int>(communication_threads(core_share(env.local_world_size)));
      options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(rendezvous_.bind()));
      group_ = c10::make_intrusive<c10d::ProcessGroupGloo>(rendezvous_.store("fitscope/gloo"), static_cast<int>(env.rank),
                                                           static_cast<int>(env.world_size), options);
      // every rank connected before any goes on: a rank that then fails at once (bad input) must not
      // close its connections under a peer still making its own, whose error would be "connection
      // closed by peer" instead of the same bad input
      group_->barrier()->wait();
    } catch (const std::invalid_argument&) {
      throw;
    } catch (const std::exception& e) {
      rendezvous_.setup_failed(e);
    }
  }

  std::unique_ptr<PendingCollective> all_reduce_async(const at::Tensor& tensor) override {
    std::vector<at::Tensor> tensors{tensor};
    auto work = run("all_reduce", [&] { return group_->allreduce(tensors); });
    return std::make_unique<GlooPending>(*this, std::move(tensors), std::move(work), "all_reduce");
  }

  void broadcast(const at::Tensor& tensor, int64_t root) override {
    std::vector<at::Tensor> tensors{tensor};
    c10d::BroadcastOptions options;
    options.rootRank = root;
    wait(run("broadcast", [&] { return group_->broadcast(tensors, options); }), "broadcast");
  }

  at::Tensor all_gather(const at::Tensor& tensor) override {
    if (tensor.numel() == 0) {  // gloo divides by the size; the shapes agree on every rank anyway
      std::vector<int64_t> shape{world_size()};
      for (int64_t d : tensor.sizes()) shape.push_back(d);
      return at::empty(shape, tensor.options());
    }
    std::vector<at::Tensor> inputs{tensor.contiguous()};
    std::vector<std::vector<at::Tensor>> outputs(1);
    for (int64_t r = 0; r < world_size(); ++r) outputs[0].push_back(at::empty_like(inputs[0]));
    wait(run("all_gather", [&] { return group_->allgather(outputs, inputs); }), "all_gather");
    return at::stack(outputs[0]);
  }

  void barrier() override {
    wait(run("barrier", [&] { return group_->barrier(); }), "barrier");
  }

  /// Waits for `work`, polling first; a failure becomes a PeerFailure naming the silent ranks.
  void wait(const c10::intrusive_ptr<c10d::Work>& work, const char* what) {
    const int64_t until = StepClock::now_ns() + poll_ns_;
    while (!work->isCompleted() && StepClock::now_ns() < until) std::this_thread::yield();
    run(what, [&] { work->wait(); });
  }

 private:
  int64_t poll_ns_;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group_;
};

GlooPending::GlooPending(GlooContext& context, std::vector<at::Tensor> tensors, c10::intrusive_ptr<c10d::Work> work,
                         const char* what)
    : context_(context), tensors_(std::move(tensors)), work_(std::move(work)), what_(what) {
  // the future's callbacks run on gloo's thread right after the collective completes
  work_->getFuture()->addCallback([done = completed_ns_](c10::ivalue::Future&) { done->store(StepClock::now_ns()); });
}

void GlooPending::wait() {
  context_.wait(work_, what_);
  if (completed_ns_->load() == 0) completed_ns_->store(StepClock::now_ns());  // completed just now
}

}  // namespace

std::shared_ptr<Context> make_gloo_context(const Environment& env, std::chrono::milliseconds timeout,
                                           std::chrono::microseconds poll) {
  const std::vector<int> before = thread_names::thread_ids();
  auto context = std::make_shared<GlooContext>(env, timeout, poll);
  thread_names::name_new_threads(before, thread_names::kCommunication);  // gloo's and the store's
  return context;
}
#else
std::shared_ptr<Context> make_gloo_context(const Environment&, std::chrono::milliseconds, std::chrono::microseconds) {
  throw std::invalid_argument(
      "the Gloo backend is not in this build of fitscope: gloo's headers were not found beside libtorch "
      "(expected nccl, or a build with them)");
}
#endif

}  // namespace fitscope::distributed
