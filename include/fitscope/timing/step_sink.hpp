#pragma once
/// StepSink: receives the record of every training step as it ends (steps.csv, a trace, a test probe).
/// Called on the training thread, inside the loop: keep on_step cheap. A sink may throw; the error ends
/// the run.

#include <cstdint>
#include <vector>

#include "fitscope/timing/callback_timing.hpp"
#include "fitscope/timing/loader_stats.hpp"
#include "fitscope/timing/step_clock.hpp"
#include "fitscope/timing/thread_span.hpp"

namespace fitscope {

class StepSink {
 public:
  virtual ~StepSink() = default;
  /// One finished step.
  virtual void on_step(const StepRecord& record) = 0;
  /// Validation at the end of `epoch` (0-based), on the training thread, on steady_clock like the steps.
  virtual void on_validation(int64_t /*epoch*/, int64_t /*start_ns*/, int64_t /*dur_ns*/) {}
  /// Work on the loader's worker threads, given before finish().
  virtual void on_thread_spans(const std::vector<ThreadSpan>& /*spans*/) {}
  /// The loader's workers and prefetch depth as --workers auto / --prefetch auto changed them, given
  /// before finish().
  virtual void on_loader_changes(const std::vector<LoaderChange>& /*changes*/) {}
  /// Hook calls that ran off the training thread (async callbacks), given before finish().
  virtual void on_callback_spans(const std::vector<CallbackSpan>& /*spans*/) {}
  /// The run has ended (normally or not): flush what is buffered.
  virtual void finish() {}
};

}  // namespace fitscope
