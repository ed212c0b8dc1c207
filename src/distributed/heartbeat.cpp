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

  static std::string key(int64_t r) { return "fitscope/heartbeat/" + std::to_string(r); }

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
      wake.wait_for(lock, interval, [this] { return stop; });
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
