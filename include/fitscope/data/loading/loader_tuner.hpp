#pragma once
/// LoaderTuner: the controller behind --workers auto and --prefetch auto, in the spirit of tf.data's
/// AUTOTUNE. The loader measures windows of half a second (the first 0.05, 0.1, 0.2, 0.4 s): how
/// long the training step waited for batches, how long the workers took to build them and how much
/// CPU that used. The tuner answers with the setting for the next window:
///
///   - the step waited >= 3 % of the window and the workers were busy: add workers. When a build is
///     mostly waiting (sleep, I/O: < 50 % CPU) it jumps to the count that hides it, 1.25 x build time /
///     step time; when a build computes it adds one worker at a time, since the workers and the step's
///     intra-op threads share the cores;
///   - the step waited and the workers were idle: prefetch deeper (x 2);
///   - the step waited < 1 %: try one worker fewer, which leaves a core to the step, when the others
///     still build with 1.25 x headroom (1.25 x build time / step time <= workers - 1).
///
/// Every change is a trial judged on the next window's throughput (batches handed out per second): an
/// added worker or depth stays when throughput rose >= 2 % (a worker added to a build that mostly
/// waits also when the step now waits < 3 %: a sleeping thread costs no core, and a short window's
/// throughput is noisy); a removed worker stays when throughput fell < 2 % and the step still waited
/// < 2 %; otherwise the tuner goes back and leaves that direction alone
/// for 4 windows, twice as long after each further failure. The depth follows the workers (2 per
/// worker) within `max_prefetch`, the memory budget for queued batches. Pure logic, no clock, no
/// threads, no libtorch.

#include <cstdint>
#include <string>

namespace fitscope {

/// What the loader measured over one window at the current setting.
struct LoaderWindow {
  double seconds = 0;      ///< wall time of the window
  int64_t batches = 0;     ///< batches handed to the consumer
  double wait_s = 0;       ///< of it, the consumer blocked waiting for a batch
  int64_t built = 0;       ///< batches the workers finished
  double build_s = 0;      ///< their wall time, summed over workers
  double build_cpu_s = 0;  ///< the CPU time they used
};

struct LoaderSetting {
  int64_t workers = 1;
  int64_t prefetch = 2;
  bool operator==(const LoaderSetting& o) const { return workers == o.workers && prefetch == o.prefetch; }
  bool operator!=(const LoaderSetting& o) const { return !(*this == o); }
};

class LoaderTuner {
 public:
  struct Options {
    bool tune_workers = true;   ///< else `start.workers` stays
    bool tune_prefetch = true;  ///< else `start.prefetch` stays
    int64_t max_workers = 16;
    int64_t max_prefetch = 64;  ///< the budget for queued batches, in batches
  };
  /// Throws std::invalid_argument for a setting or bound below 1.
  LoaderTuner(LoaderSetting start, Options options);

  /// The budget for queued batches changed (the loader knows a batch's size after the first one).
  void set_max_prefetch(int64_t batches);

  /// Judges a window measured at setting(); returns true when the setting changed, and why() says why.
  bool observe(const LoaderWindow& window);
  /// The setting for the next window; its prefetch is at least its workers.
  const LoaderSetting& setting() const { return setting_; }
  const std::string& why() const { return why_; }

 private:
  enum class Direction { none, more_workers, fewer_workers, deeper };
  void judge_trial(double throughput, double wait_share, bool waiting_build);
  void propose(const LoaderWindow& w, double throughput, double wait_share);
  void change(LoaderSetting to, Direction direction, double base, std::string why);
  int64_t depth_for(int64_t workers) const;

  Options options_;
  LoaderSetting setting_;
  int64_t fixed_prefetch_;  // start.prefetch, kept when the depth is not tuned
  std::string why_;
  Direction trial_ = Direction::none;  // the change the next window judges
  LoaderSetting before_;               // the setting before it
  double base_throughput_ = 0;         // and its throughput
  int64_t depth_per_worker_ = 2;       // the prefetch depth per worker (deeper trials double it)
  int64_t cooldown_[4] = {0, 0, 0, 0};  // windows before trying a direction again
  int64_t failures_[4] = {0, 0, 0, 0};  // its failed trials in a row
};

}  // namespace fitscope
