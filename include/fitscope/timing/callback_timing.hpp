#pragma once
/// CallbackTiming: how long each callback spends in each hook, measured by CallbackList around every
/// call (one clock read per callback call). `mode` is how the callback runs: "sync" on the training
/// thread, "async" off it (then `durations` is the time the hook's own code ran on the callback
/// thread, and `stall` the time the training thread spent blocked handing calls over on a full
/// queue). Value type; not thread-safe.

#include <cstdint>
#include <string>

#include "fitscope/timing/hook.hpp"
#include "fitscope/timing/streaming_quantiles.hpp"

namespace fitscope {

struct CallbackTiming {
  std::string name;                ///< Callback::name()
  Hook hook = Hook::on_train_begin;
  std::string mode = "sync";       ///< "sync" | "async"
  StreamingQuantiles durations;    ///< per call, on the training thread (ns)
  int64_t stall_ns = 0;            ///< total time blocked on a full async queue (ns)
};

/// One hook call run off the training thread, on steady_clock (ns since its epoch), for the trace.
struct CallbackSpan {
  std::string name;  ///< "<callback>.<hook>"
  int64_t start_ns = 0;
  int64_t dur_ns = 0;
};

}  // namespace fitscope
