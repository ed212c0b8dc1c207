#pragma once
/// The intra-op thread policy. On a small machine, as many intra-op threads as cores make the step
/// time's tail explode (the loader, callbacks and the OS compete with every parallel region: p99 ~25x
/// p50 at batch 32 on 2 cores), so the default leaves one core free: max(1, cores - 1). With several
/// ranks on one machine, each gets its share of the cores less one for its loader and communication:
/// max(1, cores / ranks - 1).
/// apply_threads() sets libtorch's intra-op threads and one inter-op thread; call it before training,
/// from one thread.

#include <cstdint>

namespace fitscope {

/// max(1, hardware threads - 1) for one process; max(1, hardware threads / processes - 1) for
/// `processes` ranks on this machine.
int64_t default_threads(int64_t processes = 1);
/// Sets the intra-op thread count (>= 1; std::invalid_argument otherwise) and returns what libtorch
/// now uses.
int64_t apply_threads(int64_t threads);

}  // namespace fitscope
