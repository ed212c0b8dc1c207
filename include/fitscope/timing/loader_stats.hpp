#pragma once
/// LoaderStats: how well a loader kept up with the training step (a plain value; no libtorch). The
/// loader (data/) fills it in; it sits in timing/ so that the step sinks and the summary read it
/// without standing on data/.

#include <cstdint>
#include <string>
#include <vector>

namespace fitscope {

/// One batch built by a worker thread, on steady_clock (the trace's loader tracks).
struct BatchBuild {
  int64_t worker = 0;    ///< 1..workers
  int64_t batch = 0;     ///< its index in the epoch
  int64_t start_ns = 0;
  int64_t dur_ns = 0;
};

/// A change of the loader's workers or prefetch depth made by --workers auto / --prefetch auto.
struct LoaderChange {
  double at_s = 0;       ///< seconds since the loader was made
  int64_t at_ns = 0;     ///< on steady_clock (the trace's counter track); 0 when read back from JSON
  int64_t workers = 0;   ///< the setting from then on
  int64_t prefetch = 0;
  std::string why;       ///< what was measured, and the decision
};

struct LoaderStats {
  int64_t workers = 0;            ///< worker threads at the end (0 = batches built on the training thread)
  int64_t prefetch = 0;           ///< prefetch depth at the end (0 without workers)
  int64_t batches = 0;            ///< batches handed out
  double mean_queue_depth = 0;    ///< built batches waiting when the consumer asked (mean)
  bool auto_workers = false;      ///< workers chosen while the run went on (LoaderOptions::kAuto)
  bool auto_prefetch = false;     ///< prefetch depth chosen while the run went on
  double batch_build_ms = 0;      ///< a worker's mean wall time to build one batch (0 = none built by workers)
  double batch_build_cpu_ms = 0;  ///< ... and the CPU time it used for it
  std::vector<LoaderChange> changes;  ///< the tuner's changes, in time order (the first sets the start)
};

/// "2 workers (auto), prefetch 4 (auto)": the setting at the end and which part of it auto chose (the
/// printout's and the report's words).
inline std::string setting_text(const LoaderStats& l) {
  return std::to_string(l.workers) + (l.workers == 1 ? " worker" : " workers") + (l.auto_workers ? " (auto)" : "") +
         ", prefetch " + std::to_string(l.prefetch) + (l.auto_prefetch ? " (auto)" : "");
}

/// Why the batches were built on the training thread: "workers set to 0", or auto's reason ("auto: a batch
/// builds in ...", from its first change).
inline std::string training_thread_reason(const LoaderStats& l) {
  if (!l.auto_workers) return "workers set to 0";
  const std::string mark = "(auto): ";
  const std::string why = l.changes.empty() ? std::string() : l.changes.front().why;
  const auto at = why.find(mark);
  return at == std::string::npos ? std::string("auto") : "auto: " + why.substr(at + mark.size());
}

}  // namespace fitscope
