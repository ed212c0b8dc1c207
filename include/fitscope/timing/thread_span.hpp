#pragma once
/// ThreadSpan: an interval of work on a thread other than the training thread (a loader worker
/// building a batch, the checkpoint writer writing a file), on steady_clock like StepRecord: the trace
/// draws each thread as a track of its own. A plain value.

#include <cstdint>
#include <string>

namespace fitscope {

struct ThreadSpan {
  std::string thread;    ///< the track: "loader worker 1", "checkpoint writer"
  std::string name;      ///< what it did: "batch 12", "checkpoint of step 40"
  int64_t start_ns = 0;  ///< on steady_clock, ns since its epoch
  int64_t dur_ns = 0;
};

}  // namespace fitscope
