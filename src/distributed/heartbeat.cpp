#include "heartbeat.hpp"

#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

#include "fitscope/threads/thread_names.hpp"

namespace fitscope::distributed::detail {

using Clock = std::chrono::steady_clock;

struct Heartbeat::State {
  c10::intrusive_ptr<c10d::Store> store;
  int64_t rank = 0;
  std::chrono::milliseconds interval{};
  std::mutex mutex;
  std::condition_variable wake;
  bool stop = false, finished = false;
  std::vector<int64_t> seen;                // last counter value of each rank
  std::vector<Clock::time_point> changed;   // when it last moved
  Clock::time_point store_answered;         // the last time the store answered
  Clock::duration paused{};                 // the longest time this process did not run (its wait overslept)
  Clock::time_point pause_ended;            // when that pause ended
  Clock::time_point waiting_since;          // when the current wait began ({} when not waiting)

  static std::string key(int64_t r) { return "fitscope/heartbeat/" + std::to_string(r); }

  /// A wait from `since` to `now` far past its interval means this process did not run (SIGSTOP, a
  /// debugger, swapping): kept when the longest yet. Under the mutex.
  void note_pause(Clock::time_point since, Clock::time_point now) {
    if (now - since > 4 * interval && now - since > paused) {
      paused = now - since;
      pause_ended = now;
    }
  }

  void run() {
    std::unique_lock<std::mutex> lock(mutex);
    while (!stop) {
      lock.unlock();
      std::vector<int64_t> values(seen.size(), -1);
      bool answered = true;
      try {
        for (std::size_t r = 0; r < values.size(); ++r) {
          values[r] = store->add(key(static_cast<int64_t>(r)), static_cast<int64_t>(r) == rank ? 1 : 0);
        }
      } catch (const std::exception&) {
        answered = false;  // the store is dead or stopped: its host (rank 0) is the suspect
      }
      lock.lock();
      const auto now = Clock::now();
      if (answered) {
        store_answered = now;
        for (std::size_t r = 0; r < values.size(); ++r) {
          if (values[r] != seen[r]) {
            seen[r] = values[r];
            changed[r] = now;
          }
        }
      }
      // a wait that oversleeps by far: this process did not run, so its peers, not it, saw silence,
      // and its own diagnosis must say so
      const auto before = waiting_since = Clock::now();
      wake.wait_for(lock, interval, [this] { return stop; });
      waiting_since = {};
      if (!stop) note_pause(before, Clock::now());
    }
    finished = true;
    wake.notify_all();
  }

  /// Ranks silent for longer than `stale`, described; empty when none.
  std::string silent(std::chrono::milliseconds stale) const {
    const auto now = Clock::now();
    char text[160];
    if (now - store_answered > stale) {
      std::snprintf(text, sizeof text,
                    "rank 0 (it hosts the rendezvous store, which has not answered for %.1f s)",
                    std::chrono::duration<double>(now - store_answered).count());
      return text;
    }
    std::string out;
    for (std::size_t r = 0; r < seen.size(); ++r) {
      if (static_cast<int64_t>(r) == rank || now - changed[r] <= stale) continue;
      std::snprintf(text, sizeof text, "%srank %zu (no heartbeat for %.1f s)", out.empty() ? "" : ", ", r,
                    std::chrono::duration<double>(now - changed[r]).count());
      out += text;
    }
    return out;
  }
};

Heartbeat::Heartbeat(c10::intrusive_ptr<c10d::Store> store, int64_t rank, int64_t world_size,
                     std::chrono::milliseconds interval)
    : state_(std::make_shared<State>()) {
  state_->store = std::move(store);
  state_->rank = rank;
  state_->interval = interval;
  state_->seen.assign(static_cast<std::size_t>(world_size), -1);
  state_->changed.assign(static_cast<std::size_t>(world_size), Clock::now());
  state_->store_answered = Clock::now();
  std::thread([state = state_] {
    thread_names::name_this_thread(thread_names::kHeartbeat);
    state->run();
  }).detach();
}

Heartbeat::~Heartbeat() {
  std::unique_lock<std::mutex> lock(state_->mutex);
  state_->stop = true;
  state_->wake.notify_all();
  // a store operation stuck on a stopped peer must not hold up the exit: the thread owns its state
  state_->wake.wait_for(lock, 2 * state_->interval, [this] { return state_->finished; });
}

std::string Heartbeat::own_pause(std::chrono::milliseconds longer_than, std::chrono::milliseconds within) const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  const auto now = Clock::now();
  // a wait still going far past its interval: the process has just run again, before its thread did
  if (state_->waiting_since != Clock::time_point{}) state_->note_pause(state_->waiting_since, now);
  if (state_->paused <= longer_than || now - state_->pause_ended > within) return {};
  char text[200];
  std::snprintf(text, sizeof text, "did not run for %.1f s until %.1f s ago (the process was stopped: SIGSTOP, a debugger or the "
                "machine swapping), so its peers took it for failed",
                std::chrono::duration<double>(state_->paused).count(), std::chrono::duration<double>(now - state_->pause_ended).count());
  return text;
}

std::string Heartbeat::diagnose() {
  const auto stale = state_->interval * 5 / 2;
  const auto give_up = Clock::now() + 4 * state_->interval;  // a poll, then the stale margin
  std::unique_lock<std::mutex> lock(state_->mutex);
  std::string found = state_->silent(stale);
  while (found.empty() && Clock::now() < give_up) {
    lock.unlock();
    std::this_thread::sleep_for(state_->interval / 2);
    lock.lock();
    found = state_->silent(stale);
  }
  return found;
}

}  // namespace fitscope::distributed::detail
