#pragma once
/// TraceWriter: writes trace.json in Chrome's Trace Event format (opens in Perfetto and
/// chrome://tracing). For every kept step: one complete event ("ph":"X") named "step" and one per
/// phase that took time (a phase of zero length is left out), `ts`/`dur` in microseconds from the
/// first event, `pid` = rank, `tid` = 1 (the training thread), `args` with epoch and batch; one
/// "validation" event per epoch that validated, on the training thread too; one event per async
/// callback hook call on `tid` = 2 (the callback thread); and one track per other thread from `tid` 3
/// on, in name order: each loader worker's batches ("loader worker 1": "batch 12") and the backup
/// writer's checkpoints ("checkpoint writer"); a counter ("ph":"C") named "loader" with the workers and
/// prefetch depth that --workers auto / --prefetch auto set, at each change. Phase events tile their step: each starts
/// where the previous one ends, so durations are exact and events nest; their order inside the step is
/// the canonical phase order, not necessarily the order in which the phases ran.
///
/// Bounded size: the first `keep_first` steps are kept, then one step in every `sample_every`.
/// Records are held in memory and written at finish() with write_file_atomically.
/// Training thread only.

#include <functional>
#include <string>
#include <vector>

#include "fitscope/timing/step_sink.hpp"

namespace fitscope {

struct TraceOptions {
  int64_t keep_first = 2000;   ///< steps kept from the start
  int64_t sample_every = 100;  ///< after those, keep one step in this many
  /// Read at finish(): work on threads the fit does not hand to its sinks (the backup writer's).
  std::function<std::vector<ThreadSpan>()> more_thread_spans;
};

class TraceWriter : public StepSink {
 public:
  explicit TraceWriter(std::string path, TraceOptions options = {});
  void on_step(const StepRecord& record) override;
  void on_validation(int64_t epoch, int64_t start_ns, int64_t dur_ns) override;
  void on_thread_spans(const std::vector<ThreadSpan>& spans) override;
  void on_callback_spans(const std::vector<CallbackSpan>& spans) override;
  void on_loader_changes(const std::vector<LoaderChange>& changes) override;
  void finish() override;
  /// Steps kept so far.
  std::size_t kept() const { return records_.size(); }

 private:
  std::string path_;
  TraceOptions options_;
  int64_t seen_ = 0;
  std::vector<StepRecord> records_;
  std::vector<CallbackSpan> spans_;
  std::vector<ThreadSpan> thread_spans_;
  std::vector<LoaderChange> loader_changes_;
  struct Validation {
    int64_t epoch, start_ns, dur_ns;
  };
  std::vector<Validation> validations_;
};

}  // namespace fitscope
