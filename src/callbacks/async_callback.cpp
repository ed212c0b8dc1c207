#include "fitscope/callbacks/async_callback.hpp"

#include <utility>

#include "fitscope/timing/step_clock.hpp"

namespace fitscope {

AsyncCallback::AsyncCallback(std::shared_ptr<Callback> inner, std::size_t capacity)
    : inner_(std::move(inner)), executor_(capacity) {
  for (std::size_t h = 0; h < kHookCount; ++h) labels_[h] = inner_->name() + "." + std::string(hook_name(static_cast<Hook>(h)));
}

void AsyncCallback::set_context(TrainingContext* context) {
  Callback::set_context(context);
  inner_->set_context(context);
}

std::optional<StreamingQuantiles> AsyncCallback::run_times(Hook hook) const {
  std::lock_guard<std::mutex> lock(spans_mutex_);
  return run_times_[static_cast<std::size_t>(hook)];
}

std::vector<CallbackSpan> AsyncCallback::take_spans() {
  std::lock_guard<std::mutex> lock(spans_mutex_);
  return std::exchange(spans_, {});
}

template <typename Call>
void AsyncCallback::queue(Hook hook, Call call) {
  const std::string& label = labels_[static_cast<std::size_t>(hook)];  // built once: no allocation per call
  auto timed = [this, &label, hook, call = std::move(call)]() mutable {
    const int64_t start = StepClock::now_ns();
    call();
    const int64_t end = StepClock::now_ns();
    std::lock_guard<std::mutex> lock(spans_mutex_);
    run_times_[static_cast<std::size_t>(hook)].add(end - start);
    if (spans_.size() < kMaxSpans) spans_.push_back({label, start, end - start});
  };
  stall_ns_ += executor_.submit(std::move(timed), label).count();
}

template <typename Call>
void AsyncCallback::queue_and_wait(Hook hook, Call call) {
  queue(hook, std::move(call));
  executor_.flush();
}

// Logs are captured by value: the callback reads a snapshot, never the training thread's object.
#define FITSCOPE_ASYNC_LOGS(hook, how) \
  void AsyncCallback::hook(Logs& logs) { \
    how(Hook::hook, [inner = inner_, logs]() mutable { inner->hook(logs); }); \
  }
#define FITSCOPE_ASYNC_INDEX(hook, how) \
  void AsyncCallback::hook(int64_t index, Logs& logs) { \
    how(Hook::hook, [inner = inner_, index, logs]() mutable { inner->hook(index, logs); }); \
  }
FITSCOPE_ASYNC_LOGS(on_train_begin, queue_and_wait)
FITSCOPE_ASYNC_LOGS(on_train_end, queue_and_wait)
FITSCOPE_ASYNC_INDEX(on_epoch_begin, queue_and_wait)
FITSCOPE_ASYNC_INDEX(on_epoch_end, queue_and_wait)
FITSCOPE_ASYNC_INDEX(on_train_batch_begin, queue)
FITSCOPE_ASYNC_INDEX(on_train_batch_end, queue)
FITSCOPE_ASYNC_LOGS(on_test_begin, queue_and_wait)
FITSCOPE_ASYNC_LOGS(on_test_end, queue_and_wait)
FITSCOPE_ASYNC_INDEX(on_test_batch_begin, queue)
FITSCOPE_ASYNC_INDEX(on_test_batch_end, queue)
FITSCOPE_ASYNC_LOGS(on_predict_begin, queue_and_wait)
FITSCOPE_ASYNC_LOGS(on_predict_end, queue_and_wait)
FITSCOPE_ASYNC_INDEX(on_predict_batch_begin, queue)
FITSCOPE_ASYNC_INDEX(on_predict_batch_end, queue)
#undef FITSCOPE_ASYNC_LOGS
#undef FITSCOPE_ASYNC_INDEX

}  // namespace fitscope
