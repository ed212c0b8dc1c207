#ifndef USE_C10D_GLOO  // ProcessGroupGloo.hpp declares nothing without it (Torch's config usually sets it)
#define USE_C10D_GLOO
#endif
#include "fitscope/dist/gloo_context.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <vector>

#include "fitscope/timing/step_clock.hpp"
#include "heartbeat.hpp"

namespace fitscope::dist {
namespace {

/// The first line of a c10d/gloo error (they append C++ stack traces).
std::string first_line(const std::exception& e) {
  std::string text = e.what();
  return text.substr(0, text.find('\n'));
}

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

class GlooContext final : public Context {
 public:
  GlooContext(const Environment& env, std::chrono::milliseconds timeout) : env_(env), timeout_(timeout) {
    const std::string where = env.master_addr + ":" + std::to_string(env.master_port);
    const std::string bind = local_address_towards(env.master_addr);
    try {
      store_ = connect(true);
      auto options = c10d::ProcessGroupGloo::Options::create(timeout);
      options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(bind));
      group_ = c10::make_intrusive<c10d::ProcessGroupGloo>(c10::make_intrusive<c10d::PrefixStore>("fitscope/gloo", store_),
                                                           static_cast<int>(env.rank), static_cast<int>(env.world_size),
                                                           options);
      const auto interval = std::clamp(timeout / 10, std::chrono::milliseconds(50), std::chrono::milliseconds(1000));
      auto beat_store = connect(false);
      beat_store->setTimeout(2 * interval);
      heartbeat_ = std::make_unique<detail::Heartbeat>(beat_store, env.rank, env.world_size, interval);
    } catch (const std::invalid_argument&) {
      throw;
    } catch (const std::exception& e) {
      throw PeerFailure("rank " + std::to_string(env.rank) + ": the rendezvous of " + std::to_string(env.world_size) +
                        " ranks at " + where + " (binding to " + bind + ") did not complete within " +
                        std::to_string(timeout.count() / 1000.0).substr(0, 5) + " s: " + first_line(e));
    }
  }

  int64_t rank() const override { return env_.rank; }
  int64_t world_size() const override { return env_.world_size; }
  int64_t local_rank() const override { return env_.local_rank; }
  int64_t local_world_size() const override { return env_.local_world_size; }

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
      std::vector<int64_t> shape{env_.world_size};
      for (int64_t d : tensor.sizes()) shape.push_back(d);
      return at::empty(shape, tensor.options());
    }
    std::vector<at::Tensor> inputs{tensor.contiguous()};
    std::vector<std::vector<at::Tensor>> outputs(1);
    for (int64_t r = 0; r < env_.world_size; ++r) outputs[0].push_back(at::empty_like(inputs[0]));
    wait(run("all_gather", [&] { return group_->allgather(outputs, inputs); }), "all_gather");
    return at::stack(outputs[0]);
  }

  void barrier() override {
    wait(run("barrier", [&] { return group_->barrier(); }), "barrier");
  }

  /// Waits for `work`; a failure becomes a PeerFailure naming the silent ranks.
  void wait(const c10::intrusive_ptr<c10d::Work>& work, const char* what) {
    try {
      work->wait();
    } catch (const std::exception& e) {
      fail(what, e);
    }
  }

  /// The first failure is diagnosed (which rank went silent); every later one, e.g. the buckets
  /// still in flight, repeats it at once.
  [[noreturn]] void fail(const char* what, const std::exception& e) {
    std::lock_guard<std::mutex> lock(failure_mutex_);
    if (failure_.empty()) {
      std::string who = heartbeat_->diagnose();
      if (who.empty()) who = "a peer";
      failure_ = who + " stopped taking part: " + what + " failed on rank " + std::to_string(env_.rank) + " (timeout " +
                 std::to_string(timeout_.count()) + " ms): " + first_line(e);
    }
    throw PeerFailure(failure_);
  }

 private:
  template <typename Start>
  c10::intrusive_ptr<c10d::Work> run(const char* what, Start&& start) {
    try {
      return start();
    } catch (const std::exception& e) {
      fail(what, e);
    }
  }

  /// A connection to the rendezvous store (the first of rank 0 hosts it).
  c10::intrusive_ptr<c10d::TCPStore> connect(bool host) const {
    c10d::TCPStoreOptions options;
    options.port = static_cast<std::uint16_t>(env_.master_port);
    options.isServer = host && env_.rank == 0;
    options.numWorkers = static_cast<std::size_t>(env_.world_size);
    options.waitWorkers = host;
    options.timeout = timeout_;
    return c10::make_intrusive<c10d::TCPStore>(env_.master_addr, options);
  }

  Environment env_;
  std::chrono::milliseconds timeout_;
  c10::intrusive_ptr<c10d::TCPStore> store_;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group_;
  std::unique_ptr<detail::Heartbeat> heartbeat_;
  std::mutex failure_mutex_;
  std::string failure_;  // the first failure, described
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

std::shared_ptr<Context> make_gloo_context(const Environment& env, std::chrono::milliseconds timeout) {
  return std::make_shared<GlooContext>(env, timeout);
}

std::shared_ptr<Context> context_from_environment(std::chrono::milliseconds timeout) {
  const auto env = read_environment();
  if (!env || env->world_size == 1) return single_process_context();
  return make_gloo_context(*env, timeout);
}

}  // namespace fitscope::dist
