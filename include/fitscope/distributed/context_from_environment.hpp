#pragma once
/// The context of a launched run (torchrun's environment, or `fitscope launch`'s), on the backend
/// asked for: every program runs alone or launched with the same line.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>

#include "fitscope/distributed/context.hpp"

namespace fitscope::distributed {

/// automatic: NCCL where this rank trains on a GPU and the build has NCCL, else Gloo.
enum class Backend { automatic, gloo, nccl };

/// single_process_context() when not launched, or launched as a world of one (unless `backend` is
/// nccl: then a world of one goes through NCCL too); otherwise the c10d context of `backend`.
/// `cuda_device`: the GPU this rank trains on (none: the CPU). Throws std::invalid_argument for NCCL
/// without a GPU or without NCCL in this build (naming Backend::nccl), PeerFailure when the rendezvous
/// does not complete within `timeout`. Each call makes a new context (and rendezvous). A c10d context
/// sets SIGPIPE to be ignored when the program left it at its default (as Python does for torch): a
/// peer's closed socket then fails the collective, naming the peer, instead of killing this rank.
std::shared_ptr<Context> context_from_environment(std::chrono::milliseconds timeout = kDefaultTimeout,
                                                  Backend backend = Backend::automatic,
                                                  std::optional<int64_t> cuda_device = std::nullopt);

}  // namespace fitscope::distributed
