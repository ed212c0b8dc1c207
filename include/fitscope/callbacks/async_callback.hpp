#pragma once
/// AsyncCallback: runs another callback's hooks off the training thread, in their synchronous order,
/// on an AsyncExecutor. Batch hooks are queued with a copy of their logs and return at once (the
/// training thread only waits when the queue is full: that wait is `stall_ns`). Every other hook
/// (train, epoch, test and predict begin/end) is queued and then waited for, so epoch-level hooks see
/// every batch event and the run's end is never ahead of its callbacks. An error in the wrapped
/// callback fails the run at the next hook, named "<callback>.<hook> failed: <message>".
///
/// CallbackList wraps every callback whose async() is set; the wrapper owns its executor, so its
/// thread ends with the fit that made it. The wrapped callback must only observe (it must not call
/// request_stop or set_learning_rate: those belong to the training thread), and keys it adds to
/// the logs stay in its copy).

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "fitscope/callbacks/detail/async_executor.hpp"
#include "fitscope/callbacks/callback.hpp"

namespace fitscope {

class AsyncCallback : public Callback {
 public:
  /// Default queue capacity: 64 hook calls.
  static constexpr std::size_t kDefaultCapacity = 64;

  explicit AsyncCallback(std::shared_ptr<Callback> inner, std::size_t capacity = kDefaultCapacity);

  std::string name() const override { return inner_->name(); }
  std::string mode() const override { return "async"; }
  int64_t stall_ns() const override { return stall_ns_; }
  CallbackTraits traits() const override { return inner_->traits(); }
  void set_context(TrainingContext* context) override;
  std::vector<CallbackSpan> take_spans() override;
  std::optional<StreamingQuantiles> run_times(Hook hook) const override;
  /// Spans kept for the trace; later ones are dropped.
  static constexpr std::size_t kMaxSpans = 20000;

  void on_train_begin(Logs& logs) override;
  void on_train_end(Logs& logs) override;
  void on_epoch_begin(int64_t epoch, Logs& logs) override;
  void on_epoch_end(int64_t epoch, Logs& logs) override;
  void on_train_batch_begin(int64_t batch, Logs& logs) override;
  void on_train_batch_end(int64_t batch, Logs& logs) override;
  void on_test_begin(Logs& logs) override;
  void on_test_end(Logs& logs) override;
  void on_test_batch_begin(int64_t batch, Logs& logs) override;
  void on_test_batch_end(int64_t batch, Logs& logs) override;
  void on_predict_begin(Logs& logs) override;
  void on_predict_end(Logs& logs) override;
  void on_predict_batch_begin(int64_t batch, Logs& logs) override;
  void on_predict_batch_end(int64_t batch, Logs& logs) override;

 private:
  template <typename Call>
  void queue(Hook hook, Call call);
  template <typename Call>
  void queue_and_wait(Hook hook, Call call);

  std::shared_ptr<Callback> inner_;
  std::array<std::string, kHookCount> labels_;  // "<name>.<hook>", built once
  std::array<StreamingQuantiles, kHookCount> run_times_;  // each hook's calls on the callback thread (spans_mutex_)
  int64_t stall_ns_ = 0;
  mutable std::mutex spans_mutex_;
  std::vector<CallbackSpan> spans_;  // written by the executor's thread
  AsyncExecutor executor_;           // last: its thread stops before the members above go
};

}  // namespace fitscope
