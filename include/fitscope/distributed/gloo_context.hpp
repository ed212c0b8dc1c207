#pragma once
/// The c10d Context on ProcessGroupGloo (CPU tensors), with rendezvous through c10d's TCPStore at
/// MASTER_ADDR:MASTER_PORT, hosted by rank 0.
///
/// Gloo binds to the address that reaches MASTER_ADDR (loopback for a loopback master). Every
/// collective and the rendezvous give up after `timeout`. Each rank also beats a heartbeat into the
/// store; when a collective fails, the ranks whose heartbeat stopped are named in the PeerFailure
/// (rank 0 when the store itself stopped answering). Gloo runs communication_threads() threads on the
/// rank's share of the cores (thread_policy.hpp); they and the store's are named "fs-comm".

#include <chrono>
#include <memory>

#include "fitscope/distributed/context.hpp"
#include "fitscope/distributed/environment.hpp"

namespace fitscope::distributed {

/// How long a wait polls for the collective's completion, yielding the core to any thread that
/// wants it, before it sleeps. A thread asleep on an idle core is woken by another core; on a
/// virtual machine that wake-up can cost more than a whole all-reduce of a few KiB on loopback
/// (bench_distributed prints both).
constexpr std::chrono::microseconds kDefaultPoll{2000};

/// Joins the run described by `env`. Throws PeerFailure when the rendezvous does not complete within
/// `timeout`, std::invalid_argument for a bad address. `poll` 0: waits sleep at once.
std::shared_ptr<Context> make_gloo_context(const Environment& env, std::chrono::milliseconds timeout = kDefaultTimeout,
                                           std::chrono::microseconds poll = kDefaultPoll);

}  // namespace fitscope::distributed
