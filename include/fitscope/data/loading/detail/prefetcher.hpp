#pragma once
/// Prefetcher<T>: builds the items 0..count-1 of a pass on `workers` threads, at most `depth` items
/// ahead of the consumer (built or being built), and hands them out strictly in index order, so the
/// result never depends on the number of workers or on scheduling.
///
/// A job that throws does not stop the others; its exception is rethrown by next() when the consumer
/// reaches that index. cancel() (and start() of a new pass, and the destructor) abandons the pass:
/// queued items are dropped, jobs in progress are told to stop through their StopToken and waited for,
/// so stopping early never hangs and leaks no thread.
///
/// The prefetcher also reports how far ahead the workers are: at every next() it samples how many
/// items were already built (the queue's depth), and mean_depth() averages those samples.
///
/// set_workers() and set_depth() change the number of working threads and the depth at any time, also
/// in the middle of a pass, without changing any item or their order: a worker beyond the new count
/// finishes the item it builds and then sleeps until it is wanted again (threads are started when first
/// wanted and joined only by the destructor).
///
/// Does not depend on libtorch. Thread-safe between the one consumer thread (start, next, cancel,
/// statistics) and the worker threads it owns.

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#ifdef __linux__
#include <pthread.h>
#include <sched.h>
#endif

namespace fitscope {

/// Lets a job notice that its pass was abandoned, and sleep without delaying shutdown.
class StopToken {
 public:
  StopToken() = default;
  /// True once the job's pass was cancelled.
  bool stop_requested() const {
    if (!state_) return false;
    std::lock_guard<std::mutex> lock(state_->mutex);
    return state_->generation != generation_ || state_->shutdown;
  }
  /// Sleeps for `duration` unless the pass is cancelled first; returns false when it was.
  template <typename Rep, typename Period>
  bool sleep_for(std::chrono::duration<Rep, Period> duration) const {
    if (!state_) {
      std::this_thread::sleep_for(duration);
      return true;
    }
    std::unique_lock<std::mutex> lock(state_->mutex);
    return !state_->wake.wait_for(lock, duration, [&] {
      return state_->generation != generation_ || state_->shutdown;
    });
  }

 private:
  template <typename T>
  friend class Prefetcher;
  struct State {
    std::mutex mutex;
    std::condition_variable wake;
    uint64_t generation = 0;
    bool shutdown = false;
  };
  StopToken(std::shared_ptr<State> state, uint64_t generation)
      : state_(std::move(state)), generation_(generation) {}
  std::shared_ptr<State> state_;
  uint64_t generation_ = 0;
};

template <typename T>
class Prefetcher {
 public:
  using Job = std::function<T(int64_t index, const StopToken& stop)>;

  /// `workers` >= 1 threads; `depth` >= 1 items ahead of the consumer (raised to `workers` so every
  /// worker can be busy). Throws std::invalid_argument otherwise. Each worker calls `on_start` first
  /// (to name itself, say; empty = nothing).
  Prefetcher(int64_t workers, int64_t depth, std::function<void()> on_start = {}) : on_start_(std::move(on_start)) {
    set_depth(depth);
    set_workers(workers);
  }

  ~Prefetcher() {
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      state_->shutdown = true;
    }
    state_->wake.notify_all();
    work_.notify_all();
    for (auto& t : threads_) t.join();
  }
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  /// Abandons the current pass (if any) and starts building items 0..count-1 with `job`.
  void start(int64_t count, Job job) {
    std::unique_lock<std::mutex> lock(state_->mutex);
    cancel_locked(lock);
    job_ = std::make_shared<Job>(std::move(job));
    count_ = count;
    next_job_ = 0;
    next_out_ = 0;
    lock.unlock();
    work_.notify_all();
  }

  /// The next item in index order; blocks until it is built. Rethrows the job's exception for that
  /// index. Throws std::out_of_range past the end of the pass.
  T next() {
    std::unique_lock<std::mutex> lock(state_->mutex);
    if (next_out_ >= count_) {
      throw std::out_of_range("prefetcher: item " + std::to_string(next_out_) + " requested from a pass of " +
                              std::to_string(count_));
    }
    depth_sum_ += static_cast<double>(ready_);
    ++depth_samples_;
    const auto built = [&] { return !pending_.empty() && pending_.front().done; };
    if (!built()) {
      work_.notify_all();  // never wait on workers that wait for room
      has_item_.wait(lock, built);
    }
    Slot taken = std::move(pending_.front());
    pending_.pop_front();
    --ready_;
    ++next_out_;
    // Waking a worker costs a system call (and, on a VM, an interrupt to another core): the workers
    // are woken once half of the queue is free rather than after every item.
    const bool wake = next_job_ < count_ && next_job_ - next_out_ <= depth_ / 2;
    lock.unlock();
    if (wake) work_.notify_all();
    if (taken.error) std::rethrow_exception(taken.error);
    return std::move(*taken.value);
  }

  /// From now on `workers` (>= 1) threads build items; the depth is raised to it if smaller.
  void set_workers(int64_t workers) {
    if (workers < 1) throw std::invalid_argument("prefetcher workers must be >= 1, got " + std::to_string(workers));
    std::lock_guard<std::mutex> lock(state_->mutex);
    while (static_cast<int64_t>(threads_.size()) < workers) {
      const int64_t ordinal = static_cast<int64_t>(threads_.size());
      threads_.emplace_back([this, ordinal] { work(ordinal); });  // it waits for the lock held here
    }
    active_ = workers;
    depth_ = std::max(depth_, workers);
    work_.notify_all();
  }
  /// From now on at most `depth` (>= 1, raised to the number of workers) items are built or being built
  /// ahead of the consumer. A smaller depth drops nothing: the workers wait until the consumer is near.
  void set_depth(int64_t depth) {
    if (depth < 1) throw std::invalid_argument("prefetch depth must be >= 1, got " + std::to_string(depth));
    std::lock_guard<std::mutex> lock(state_->mutex);
    depth_ = std::max(depth, active_);
    work_.notify_all();
  }

  /// Abandons the current pass: drops built items and waits for the jobs in progress.
  void cancel() {
    std::unique_lock<std::mutex> lock(state_->mutex);
    cancel_locked(lock);
  }

  /// Items built and waiting, now.
  int64_t ready() const {
    std::lock_guard<std::mutex> lock(state_->mutex);
    return ready_;
  }
  /// Mean number of built items waiting when the consumer asked for the next one.
  double mean_depth() const {
    std::lock_guard<std::mutex> lock(state_->mutex);
    return depth_samples_ == 0 ? 0.0 : depth_sum_ / static_cast<double>(depth_samples_);
  }
  int64_t depth() const {
    std::lock_guard<std::mutex> lock(state_->mutex);
    return depth_;
  }
  int64_t workers() const {
    std::lock_guard<std::mutex> lock(state_->mutex);
    return active_;
  }

 private:
  struct Slot {
    bool done = false;
    std::optional<T> value;
    std::exception_ptr error;
  };

  void cancel_locked(std::unique_lock<std::mutex>& lock) {
    ++state_->generation;  // jobs in progress see stop_requested(); their results are dropped
    count_ = 0;
    next_job_ = 0;
    next_out_ = 0;
    state_->wake.notify_all();  // sleeping jobs return early
    idle_.wait(lock, [&] { return running_ == 0; });
    pending_.clear();
    ready_ = 0;
    job_.reset();
  }

  bool can_start_locked() const { return next_job_ < count_ && next_job_ < next_out_ + depth_; }

  void work(int64_t ordinal) {
#ifdef __linux__
    // A woken worker must not preempt the training thread that woke it (Linux places a wakee on the
    // waker's core and lets it run first): SCHED_BATCH threads never preempt on wake-up, and the
    // scheduler moves them to an idle core instead. No privilege is needed; failure changes nothing.
    sched_param no_priority{};
    pthread_setschedparam(pthread_self(), SCHED_BATCH, &no_priority);
#endif
    if (on_start_) on_start_();
    std::unique_lock<std::mutex> lock(state_->mutex);
    for (;;) {
      work_.wait(lock, [&] { return state_->shutdown || (ordinal < active_ && can_start_locked()); });
      if (state_->shutdown) return;
      const int64_t index = next_job_++;
      const uint64_t generation = state_->generation;
      const std::shared_ptr<Job> job = job_;
      pending_.emplace_back();
      ++running_;
      lock.unlock();
      Slot result;
      try {
        result.value.emplace((*job)(index, StopToken(state_, generation)));
      } catch (...) {
        result.error = std::current_exception();
      }
      result.done = true;
      lock.lock();
      --running_;
      if (generation == state_->generation) {
        pending_[static_cast<std::size_t>(index - next_out_)] = std::move(result);
        ++ready_;
        if (index == next_out_) has_item_.notify_one();  // the item the consumer may wait for
      }
      if (running_ == 0) idle_.notify_all();
    }
  }

  std::shared_ptr<StopToken::State> state_ = std::make_shared<StopToken::State>();  // mutex, sleepers
  std::condition_variable work_;      // workers wait for an item to build
  std::condition_variable has_item_;  // the consumer waits for its next item
  std::condition_variable idle_;      // cancel waits for the jobs in progress
  int64_t depth_ = 1;
  int64_t active_ = 0;             // workers 0..active_-1 build items; the others sleep
  std::deque<Slot> pending_;       // items next_out_..next_job_-1, built or being built
  std::shared_ptr<Job> job_;
  int64_t count_ = 0;
  int64_t next_job_ = 0;           // next index to hand to a worker
  int64_t next_out_ = 0;           // next index to hand to the consumer
  int64_t running_ = 0;            // jobs in progress
  int64_t ready_ = 0;              // built items waiting
  double depth_sum_ = 0;
  int64_t depth_samples_ = 0;
  const std::function<void()> on_start_;  // read by the workers, set before they start
  std::vector<std::thread> threads_;
};

}  // namespace fitscope
