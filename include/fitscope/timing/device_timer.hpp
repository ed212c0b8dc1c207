#pragma once
/// DeviceTimer: each phase's time as the device saw it, from events recorded on the device's stream
/// at the phase boundaries and read lazily.
///
/// A GPU runs what the host enqueues later than the host enqueues it: the host's step clock times the
/// enqueueing, the events time the device's work (and any wait of the device for the host). An event
/// is recorded at each boundary into or out of a device phase (h2d, forward, backward, comm, optimizer,
/// graph, metrics). At a step's end, the earlier steps whose last event the device has passed (a non-blocking
/// query, in stream order) are resolved; nothing in the loop waits for the device. finish() waits once
/// for what is left, at the end of fit. The resolved steps form a PhaseStats of device time (the step
/// is the span from its first event to its last), warm-up steps excluded.
///
/// A step's span holds the device's work and the device's waits for the host inside the step: when the
/// host launches kernels slower than the device runs them, the device idles between them and the span
/// follows the host. So a few warm-up steps are probes (the steps 3, 6 and 9 before the warm-up ends,
/// from step kFirstProbe on: one with the default 5 warm-up steps): before the probe's first event the
/// source holds its stream busy (hold) for twice the host's last step, so the host has enqueued the
/// whole step before the device starts it. A probe whose first event the device had not passed when
/// the host ended the step is valid: its span is the device's own work with nothing to wait for
/// (busy_ms); one it had passed doubles the next hold. The device catches up on the hold within a few
/// steps of a launch-bound run, before the warm-up ends or in the first steps after it.
/// The event source is CUDA's where libtorch has it (make_cuda_event_source); tests use a fake.
/// Used from the training thread only.

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "fitscope/timing/phase.hpp"
#include "fitscope/timing/phase_stats.hpp"

namespace fitscope {

/// An event recorded on a device's stream.
class DeviceEvent {
 public:
  virtual ~DeviceEvent() = default;
};

/// Records events on the current stream of one device and reads them.
class DeviceEventSource {
 public:
  virtual ~DeviceEventSource() = default;
  /// An event recorded now on the current stream.
  virtual std::unique_ptr<DeviceEvent> record() = 0;
  /// Whether the device has passed `event` (does not block).
  virtual bool done(const DeviceEvent& event) = 0;
  /// Blocks until the device has passed `event`.
  virtual void wait(const DeviceEvent& event) = 0;
  /// Device time from `from` to `to` (both passed), in ms.
  virtual double elapsed_ms(const DeviceEvent& from, const DeviceEvent& to) = 0;
  /// Takes back an event that has been read, to record it again (default: destroys it).
  virtual void release(std::unique_ptr<DeviceEvent> /*event*/) {}
  /// Enqueues work that keeps the stream busy for at least `ms`; false where the source cannot (then
  /// no step is probed for the device's own work).
  virtual bool hold(double /*ms*/) { return false; }
};

/// CUDA events on the current stream of CUDA device `index`; null where this libtorch has no CUDA.
std::unique_ptr<DeviceEventSource> make_cuda_event_source(int64_t index);

/// Whether the phase runs work on the device (h2d, forward, backward, comm, optimizer, graph, metrics).
bool runs_on_device(Phase phase);

class DeviceTimer final : public PhaseBoundaryListener {
 public:
  /// `sample_every`: after the warm-up (as extended), the events of one step in this many are
  /// recorded (the first measured step, then every sample_every-th); every warm-up step is recorded.
  /// Each event costs the host a driver call: on a launch-bound step sampling keeps that cost small.
  DeviceTimer(std::unique_ptr<DeviceEventSource> source, int64_t warmup_steps, int64_t sample_every = 1);

  /// A phase boundary: `next` opens (nullopt: none). Records an event when the open phase or `next`
  /// runs on the device.
  void boundary(std::optional<Phase> next) override;
  /// Ends the step `host` (closing its open phase) and resolves the earlier steps the device has passed.
  void end_step(const StepRecord& host) override;
  /// Waits for the steps not yet resolved (the end of fit).
  void finish();
  /// Resolves the recorded steps the device has passed, without waiting (end_step does it too; the
  /// CUDA-graph trial asks after synchronising, for the probes' figure).
  void resolve_passed();

  /// The device's time per step and per device phase over the resolved steps.
  const PhaseStats& stats() const { return stats_; }
  /// Leaves `steps` more steps out (PhaseStats::extend_warmup).
  void extend_warmup(int64_t steps) { stats_.extend_warmup(steps); }
  /// The phases the resolved steps ran on the device, in step order.
  std::vector<Phase> measured_phases() const;
  /// Steps resolved without waiting, and in finish().
  int64_t resolved_in_loop() const { return resolved_in_loop_; }
  int64_t resolved_at_finish() const { return resolved_at_finish_; }
  /// The device's own work per step (the median span of the valid probes, in ms); nullopt when no
  /// probe was valid (or none was made: the warm-up was shorter than kFirstProbe + 1 steps, or the
  /// source cannot hold its stream).
  std::optional<double> busy_ms() const;
  /// One measured step in this many was recorded.
  int64_t sample_every() const { return sample_every_; }
  /// The probes made and those valid (all their work queued before the device reached it).
  int64_t probes_made() const { return probes_made_; }
  int64_t probes_valid() const { return static_cast<int64_t>(busy_ms_.size()); }

  static constexpr int64_t kProbes = 3, kProbeSpacing = 3;
  /// The earliest step a probe may be (the first steps set up kernels and memory).
  static constexpr int64_t kFirstProbe = 2;

 private:
  struct Step {
    StepRecord record;  // labels; the durations are filled when resolved
    std::vector<std::pair<std::unique_ptr<DeviceEvent>, std::optional<Phase>>> marks;  // event, phase it opens
    bool probe = false;  // a valid probe: its span is the device's own work
  };
  void resolve(Step& step);
  bool probing() const;  // whether the step being recorded is a probe
  bool sampled() const;  // whether the step beginning now is recorded

  std::unique_ptr<DeviceEventSource> source_;
  PhaseStats stats_;
  Step current_;
  std::optional<Phase> open_;
  std::array<bool, kPhaseCount> measured_{};
  std::deque<Step> pending_;
  int64_t resolved_in_loop_ = 0, resolved_at_finish_ = 0;
  int64_t warmup_steps_, sample_every_, steps_ended_ = 0;
  bool in_step_ = false, recording_ = true;  // a boundary of the current step was seen; its events are recorded
  int64_t last_host_step_ns_ = 0;
  double hold_factor_ = 2;
  bool held_ = false;  // the current step's stream was held before its first event
  int64_t probes_made_ = 0;
  std::vector<double> busy_ms_;
};

}  // namespace fitscope
