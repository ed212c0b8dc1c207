#pragma once
// Heartbeat: each rank bumps a counter in the rendezvous store every `interval` and watches the
// others'. When a collective fails, diagnose() names the ranks whose counter stopped moving (rank 0
// when the store, which it hosts, stopped answering). Thread-safe; the beating thread is its own
// and never blocks the destructor for longer than two intervals.

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <memory>
#include <string>

namespace fitscope::distributed::detail {

class Heartbeat {
 public:
  /// `store` is a connection of its own (the thread uses it alone).
  Heartbeat(c10::intrusive_ptr<c10d::Store> store, int64_t rank, int64_t world_size,
            std::chrono::milliseconds interval);
  ~Heartbeat();
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

  /// Which ranks stopped beating, waiting up to four intervals for the evidence; empty when all
  /// beat on.
  std::string diagnose();
  /// When this process itself did not run for longer than `longer_than` (its beating thread overslept:
  /// it was stopped) and that ended less than `within` ago, what happened, to blame it rather than the
  /// peers that gave up on it; empty otherwise.
  std::string own_pause(std::chrono::milliseconds longer_than, std::chrono::milliseconds within) const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace fitscope::distributed::detail
