#pragma once
/// StepClock: times the phases of one training step on the host's monotonic clock (steady_clock).
///
/// A step starts with begin_step() and ends with end_step(), which returns the StepRecord. In between,
/// enter(phase) starts a phase and closes the open one; leave() closes the open phase. Each boundary
/// costs one clock read. Time inside the step that no phase claims becomes `other`.
/// PhaseTimer is the scoped form: enter on construction, leave on destruction.
///
/// A disabled clock reads no time at all (every record is zero): the baseline for measuring the
/// clock's own cost. A listener (the device timer on a GPU) is told of every boundary. Owned by the
/// training loop; used from the training thread only (not thread-safe).

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>

#include "fitscope/timing/phase.hpp"

namespace fitscope {

/// The timings of one step. Durations are nanoseconds.
struct StepRecord {
  int64_t epoch = 0;     ///< 0-based epoch
  int64_t batch = 0;     ///< 0-based batch within the epoch
  int64_t rank = 0;      ///< the process's rank (0 when not distributed)
  int64_t samples = 0;   ///< examples in the batch
  int64_t start_ns = 0;  ///< start of the step on steady_clock (ns since its epoch)
  int64_t step_ns = 0;   ///< whole step, data_wait through callbacks
  std::array<int64_t, kPhaseCount> phase_ns{};  ///< per phase; phase_ns[other] = step - sum(rest)
  /// The layers were probed in this step (layer_times.hpp): its time is not the run's usual step's,
  /// and the distributions leave it out.
  bool probed = false;

  int64_t phase(Phase p) const { return phase_ns[static_cast<std::size_t>(p)]; }
  /// Sets `other` to what the step's span leaves unclaimed by the named phases.
  void set_other() {
    int64_t claimed = 0;
    for (std::size_t i = 0; i + 1 < kPhaseCount; ++i) claimed += phase_ns[i];
    phase_ns[static_cast<std::size_t>(Phase::other)] = step_ns - claimed;
  }
};

/// Told of each phase boundary of an enabled clock, after the clock read it.
class PhaseBoundaryListener {
 public:
  virtual ~PhaseBoundaryListener() = default;
  /// `next` opens (nullopt: none).
  virtual void boundary(std::optional<Phase> next) = 0;
  /// The step ended with `record`.
  virtual void end_step(const StepRecord& record) = 0;
};

class StepClock {
 public:
  using clock = std::chrono::steady_clock;

  /// Starts a step; `epoch` and `batch` label its record. With `first`, that phase opens at the same
  /// instant (one clock read instead of two).
  void begin_step(int64_t epoch, int64_t batch, std::optional<Phase> first = std::nullopt) {
    record_.epoch = epoch;
    record_.batch = batch;
    record_.samples = 0;
    record_.probed = false;
    record_.phase_ns.fill(0);
    open_ = first ? static_cast<std::size_t>(*first) : kNone;
    if (!enabled_) return;
    step_start_ = last_ = clock::now();
    if (listener_ && first) listener_->boundary(first);
  }

  /// Closes the open phase (if any) and opens `phase` at the same instant.
  void enter(Phase phase) {
    if (!enabled_) return;
    const auto now = clock::now();
    if (open_ != kNone) record_.phase_ns[open_] += (now - last_).count();
    open_ = static_cast<std::size_t>(phase);
    last_ = now;
    if (listener_) listener_->boundary(phase);
  }

  /// Closes the open phase; the time until the next enter() is `other`.
  void leave() {
    if (open_ == kNone || !enabled_) return;
    const auto now = clock::now();
    record_.phase_ns[open_] += (now - last_).count();
    open_ = kNone;
    if (listener_) listener_->boundary(std::nullopt);
  }

  /// Sets the number of examples in the current step.
  void set_samples(int64_t samples) { record_.samples = samples; }
  /// Marks the current step as probed (StepRecord::probed).
  void mark_probed() { record_.probed = true; }
  /// The phase open now (nullopt: none, or the clock is off).
  std::optional<Phase> open_phase() const {
    return enabled_ && open_ != kNone ? std::optional<Phase>(static_cast<Phase>(open_)) : std::nullopt;
  }
  /// Sets the rank written into records.
  void set_rank(int64_t rank) { record_.rank = rank; }
  /// Turns time reading on (default) or off.
  void set_enabled(bool enabled) { enabled_ = enabled; }
  bool enabled() const { return enabled_; }
  /// The listener told of each boundary (null: none); it must outlive its use.
  void set_listener(PhaseBoundaryListener* listener) { listener_ = listener; }
  PhaseBoundaryListener* listener() const { return listener_; }

  /// Ends the step: closes the open phase, computes `other` and returns the record.
  const StepRecord& end_step() {
    if (!enabled_) return record_;
    const auto now = clock::now();
    if (open_ != kNone) record_.phase_ns[open_] += (now - last_).count();
    open_ = kNone;
    record_.step_ns = (now - step_start_).count();
    record_.start_ns = step_start_.time_since_epoch().count();
    record_.set_other();
    if (listener_) listener_->end_step(record_);
    return record_;
  }

  /// Now on steady_clock, in ns since its epoch (the time base of StepRecord::start_ns).
  static int64_t now_ns() { return clock::now().time_since_epoch().count(); }

 private:
  static constexpr std::size_t kNone = kPhaseCount;
  clock::time_point step_start_;
  clock::time_point last_;
  std::size_t open_ = kNone;
  bool enabled_ = true;
  PhaseBoundaryListener* listener_ = nullptr;
  StepRecord record_;
};

/// Scoped phase: enters `phase` now and leaves it when destroyed.
class PhaseTimer {
 public:
  PhaseTimer(StepClock& clock, Phase phase) : clock_(clock) { clock_.enter(phase); }
  ~PhaseTimer() { clock_.leave(); }
  PhaseTimer(const PhaseTimer&) = delete;
  PhaseTimer& operator=(const PhaseTimer&) = delete;

 private:
  StepClock& clock_;
};

}  // namespace fitscope
