#pragma once
// Rendezvous: what the c10d contexts (Gloo, NCCL) share. The store at MASTER_ADDR:MASTER_PORT that
// rank 0 hosts (or, for a one-node `fitscope launch`, the FileStore in FITSCOPE_RENDEZVOUS_FILE), every rank's heartbeat in it, and the PeerFailure that names the rank that went
// silent: the first failure is diagnosed, every later one (the collectives still in flight) repeats
// it at once. Thread-safe. C10dContext: the base of those contexts.

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <exception>
#include <memory>
#include <mutex>
#include <string>

#include "fitscope/distributed/context.hpp"
#include "fitscope/distributed/environment.hpp"
#include "heartbeat.hpp"

namespace fitscope::distributed::detail {

/// The first line of a c10d error (they append C++ stack traces).
std::string first_line(const std::exception& e);

class Rendezvous {
 public:
  /// Connects to the store (rank 0 hosts it, waiting for the others) and starts the heartbeat.
  /// Throws PeerFailure when that does not complete within `timeout`; `bind` (the address the
  /// backend binds to, may be empty) goes into that message.
  Rendezvous(const Environment& env, std::chrono::milliseconds timeout, const std::string& bind);

  const Environment& env() const { return env_; }
  std::chrono::milliseconds timeout() const { return timeout_; }
  const std::string& bind() const { return bind_; }
  /// The store for a backend's own keys, under `prefix`.
  c10::intrusive_ptr<c10d::Store> store(const std::string& prefix) const;
  /// The PeerFailure for a rendezvous (or a backend's set-up) that failed with `e`.
  [[noreturn]] void setup_failed(const std::exception& e) const;
  /// `what` failed with `e`: throws the PeerFailure that names the silent ranks, or the rank that told
  /// its own failure first (tell_own_failure) with its error.
  [[noreturn]] void fail(const char* what, const std::exception& e);
  /// Leaves this rank's own failure in the store for its peers; never throws.
  void tell_own_failure(const std::string& what) noexcept;

 private:
  c10::intrusive_ptr<c10d::Store> connect(bool host) const;
  std::string where() const;  // the store, for messages

  Environment env_;
  std::chrono::milliseconds timeout_;
  std::string bind_;
  c10::intrusive_ptr<c10d::Store> store_;
  std::unique_ptr<Heartbeat> heartbeat_;
  std::mutex failure_mutex_;
  std::string failure_;  // the first failure, described
};

/// What the c10d contexts share: the ranks from the environment, and the start of a collective that
/// turns c10d's errors into a PeerFailure.
class C10dContext : public Context {
 public:
  C10dContext(const Environment& env, std::chrono::milliseconds timeout, const std::string& bind)
      : rendezvous_(env, timeout, bind) {}
  int64_t rank() const override { return rendezvous_.env().rank; }
  int64_t world_size() const override { return rendezvous_.env().world_size; }
  int64_t local_rank() const override { return rendezvous_.env().local_rank; }
  int64_t local_world_size() const override { return rendezvous_.env().local_world_size; }
  void tell_own_failure(const std::string& what) noexcept override { rendezvous_.tell_own_failure(what); }

 protected:
  /// start(), the call that starts a collective (`what`), whose failure names the silent ranks.
  template <typename Start>
  auto run(const char* what, Start&& start) -> decltype(start()) {
    try {
      return start();
    } catch (const std::exception& e) {
      rendezvous_.fail(what, e);
    }
  }

  Rendezvous rendezvous_;
};

}  // namespace fitscope::distributed::detail
