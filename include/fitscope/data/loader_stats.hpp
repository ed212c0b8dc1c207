#pragma once
/// LoaderStats: how well a loader kept up with the training step (a plain value; no libtorch).

#include <cstdint>

namespace fitscope {

/// One batch built by a worker thread, on steady_clock (the trace's loader tracks).
struct BatchBuild {
  int64_t worker = 0;    ///< 1..workers
  int64_t batch = 0;     ///< its index in the epoch
  int64_t start_ns = 0;
  int64_t dur_ns = 0;
};

struct LoaderStats {
  int64_t workers = 0;            ///< worker threads (0 = batches built on the training thread)
  int64_t prefetch = 0;           ///< prefetch depth in use (0 without workers)
  int64_t batches = 0;            ///< batches handed out
  double mean_queue_depth = 0;    ///< built batches waiting when the consumer asked (mean)
};

}  // namespace fitscope
