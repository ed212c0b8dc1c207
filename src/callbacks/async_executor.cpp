#include "fitscope/callbacks/detail/async_executor.hpp"

#include <algorithm>

#include <stdexcept>

#include "fitscope/threads/thread_names.hpp"

namespace fitscope {

AsyncExecutor::AsyncExecutor(std::size_t capacity) : capacity_(capacity) {
  if (capacity_ < 1) throw std::invalid_argument("async queue capacity must be >= 1, got 0");
  worker_ = std::thread([this] {
    thread_names::name_this_thread(thread_names::kCallbacks);
    work();
  });
}

AsyncExecutor::~AsyncExecutor() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    queue_.clear();
  }
  has_task_.notify_all();
  has_room_or_idle_.notify_all();
  worker_.join();
}

void AsyncExecutor::rethrow_locked() {
  if (!error_) return;
  try {
    std::rethrow_exception(error_);
  } catch (const std::exception& e) {
    throw std::runtime_error(error_label_ + " failed: " + e.what());
  } catch (...) {
    throw std::runtime_error(error_label_ + " failed with an unknown error");
  }
}

std::chrono::nanoseconds AsyncExecutor::submit(std::function<void()> task, std::string_view label) {
  std::unique_lock<std::mutex> lock(mutex_);
  rethrow_locked();
  std::chrono::nanoseconds waited{0};
  if (queue_.size() >= capacity_) {
    has_task_.notify_one();  // a full queue must be drained now
    const auto start = std::chrono::steady_clock::now();
    has_room_or_idle_.wait(lock, [this] { return queue_.size() < capacity_ || error_ || stopping_; });
    waited = std::chrono::steady_clock::now() - start;
    rethrow_locked();
  }
  queue_.push_back({std::move(task), label});
  const bool wake = worker_waiting_ && queue_.size() >= std::min(kWakeBatch, capacity_);
  lock.unlock();
  if (wake) has_task_.notify_one();
  return waited;
}

void AsyncExecutor::flush() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!queue_.empty()) has_task_.notify_one();
  has_room_or_idle_.wait(lock, [this] { return (queue_.empty() && !running_task_) || error_ || stopping_; });
  rethrow_locked();
}

void AsyncExecutor::work() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    worker_waiting_ = true;
    // woken for a batch of tasks, by flush(), or polling: single tasks need no system call to start
    while (!has_task_.wait_for(lock, kIdlePoll, [this] { return !queue_.empty() || stopping_; })) {
    }
    worker_waiting_ = false;
    if (stopping_) return;
    Task task = std::move(queue_.front());
    queue_.pop_front();
    running_task_ = true;
    lock.unlock();
    has_room_or_idle_.notify_all();
    std::exception_ptr error;
    try {
      task.run();
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    running_task_ = false;
    if (error && !error_) {
      error_ = error;
      error_label_ = std::string(task.label);
      queue_.clear();
    }
    has_room_or_idle_.notify_all();
  }
}

}  // namespace fitscope
