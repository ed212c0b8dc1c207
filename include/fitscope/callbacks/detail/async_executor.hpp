#pragma once
/// AsyncExecutor: runs tasks in submission order on one background thread, through a bounded queue.
///
/// submit() blocks while the queue is full (backpressure) and returns how long it blocked. flush()
/// waits until every submitted task has run. A task that throws stops the executor from running
/// further tasks; the error (prefixed with the task's label) is rethrown on the submitting thread by
/// the next submit() or flush(). The destructor drains nothing: it drops queued tasks, lets the
/// running one finish and joins the thread, so an aborted run never hangs.
///
/// Does not depend on libtorch. Thread-safe: one submitting thread and the worker.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace fitscope {

class AsyncExecutor {
 public:
  /// `capacity`: tasks that may wait in the queue (>= 1; std::invalid_argument otherwise).
  explicit AsyncExecutor(std::size_t capacity = 64);
  ~AsyncExecutor();
  AsyncExecutor(const AsyncExecutor&) = delete;
  AsyncExecutor& operator=(const AsyncExecutor&) = delete;

  /// Queues `task`; returns the time spent waiting for room. Rethrows an earlier task's error. The
  /// label names the task in an error; it must outlive the task (a literal, or a string its owner keeps).
  /// Waking the worker costs a system call (and an interrupt on a VM), so a submit wakes it only when
  /// kWakeBatch tasks wait; otherwise the worker picks the tasks up within kIdlePoll, and flush() wakes it.
  std::chrono::nanoseconds submit(std::function<void()> task, std::string_view label);
  /// Waits until every queued task has run; rethrows an earlier task's error.
  void flush();
  std::size_t capacity() const { return capacity_; }

  static constexpr std::size_t kWakeBatch = 8;
  static constexpr std::chrono::milliseconds kIdlePoll{2};

 private:
  struct Task {
    std::function<void()> run;
    std::string_view label;
  };
  void work();
  void rethrow_locked();

  const std::size_t capacity_;
  std::mutex mutex_;
  std::condition_variable has_task_;
  std::condition_variable has_room_or_idle_;
  std::deque<Task> queue_;
  bool running_task_ = false;
  bool worker_waiting_ = false;
  bool stopping_ = false;
  std::exception_ptr error_;
  std::string error_label_;
  std::thread worker_;
};

}  // namespace fitscope
