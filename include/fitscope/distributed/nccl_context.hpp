#pragma once
/// The c10d Context on ProcessGroupNCCL: compiled where libtorch has CUDA and NCCL's header was found
/// (FITSCOPE_WITH_NCCL), one GPU per rank.
///
/// The rendezvous, the timeout and the naming of a silent rank are the Gloo context's: the same store
/// hosted by rank 0, the same heartbeat. Collectives run on NCCL's stream. On a CUDA tensor (the
/// gradient buckets), waiting orders the current stream after the collective and the host goes on:
/// its completed_ns() is -1, for the host never sees when the GPU finished. A CPU tensor (reduced
/// metrics, the stop agreement, the gathered step records) is staged through the GPU and waiting
/// blocks until it is back, giving up with a PeerFailure after the timeout. NCCL's own watchdog,
/// the backstop, is set to twice the timeout.

#include <chrono>
#include <cstdint>
#include <memory>

#include "fitscope/distributed/context.hpp"
#include "fitscope/distributed/environment.hpp"

namespace fitscope::distributed {

/// Whether this build has the NCCL context.
bool nccl_available();

/// Joins the run described by `env` on the GPU `device_index` (made the current device). Throws
/// std::invalid_argument when this build has no NCCL, PeerFailure when the rendezvous does not
/// complete within `timeout`.
std::shared_ptr<Context> make_nccl_context(const Environment& env, int64_t device_index,
                                           std::chrono::milliseconds timeout = kDefaultTimeout);

}  // namespace fitscope::distributed
