#pragma once
/// distributed::Context: the processes of a data-parallel run and their collectives (c10d's vocabulary).
///
/// Every rank calls the same collectives in the same order; a collective returns when every rank has
/// taken part. Tensors are reduced by sum in place (dense, contiguous, on the context's device).
/// single_process_context() is the stand-in for one process: rank 0 of 1, collectives return at once.
/// The c10d implementations are make_gloo_context (gloo_context.hpp) and make_nccl_context
/// (nccl_context.hpp).
/// When a peer dies or hangs, a collective throws PeerFailure naming the rank, within the timeout.
/// Collectives are called from the training thread; all_reduce_async may also be called from
/// autograd's threads (the gradient reducer does), one at a time.

#include <ATen/core/Tensor.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

namespace fitscope::distributed {

/// Default collective and rendezvous timeout of the c10d contexts: far below c10d's 30 minutes, far
/// above a step.
constexpr std::chrono::seconds kDefaultTimeout{60};

/// A collective that failed because a peer died or stopped answering; what() names the rank.
class PeerFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A collective in flight.
class PendingCollective {
 public:
  virtual ~PendingCollective() = default;
  /// Blocks until the collective is done; throws PeerFailure when it failed.
  virtual void wait() = 0;
  /// When the collective completed (steady_clock ns), valid after wait(); -1 when the host cannot
  /// tell (a collective that wait() only ordered on a GPU stream).
  virtual int64_t completed_ns() const = 0;
};

class Context {
 public:
  virtual ~Context() = default;
  virtual int64_t rank() const = 0;
  virtual int64_t world_size() const = 0;
  /// Rank among the processes of this machine.
  virtual int64_t local_rank() const = 0;
  /// Processes on this machine.
  virtual int64_t local_world_size() const = 0;
  /// Rank 0 writes the run's files and runs the callbacks with side effects.
  bool is_chief() const { return rank() == 0; }

  /// Starts summing `tensor` across ranks, in place.
  virtual std::unique_ptr<PendingCollective> all_reduce_async(const at::Tensor& tensor) = 0;
  /// Sums `tensor` across ranks, in place.
  void all_reduce(const at::Tensor& tensor) { all_reduce_async(tensor)->wait(); }
  /// Copies rank `root`'s `tensor` into every rank's.
  virtual void broadcast(const at::Tensor& tensor, int64_t root = 0) = 0;
  /// Every rank's `tensor` (same shape everywhere), stacked: [world_size, ...].
  virtual at::Tensor all_gather(const at::Tensor& tensor) = 0;
  /// Returns when every rank has called it.
  virtual void barrier() = 0;
  /// This rank fails by itself with `what` (its own error, not a peer's): a context whose ranks share
  /// a store leaves it there, so the peers that then fail for want of this rank name it with its error
  /// (their PeerFailure, the launcher's last line). Never throws.
  virtual void tell_own_failure(const std::string& /*what*/) noexcept {}
};

/// Rank 0 of 1.
std::shared_ptr<Context> single_process_context();

}  // namespace fitscope::distributed
