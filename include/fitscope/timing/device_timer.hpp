#pragma once
/// DeviceTimer: each phase's time as the device saw it, from events recorded on the device's stream
/// at the phase boundaries and read lazily.
///
/// A GPU runs what the host enqueues later than the host enqueues it: the host's step clock times the
/// enqueueing, the events time the device's work (and any wait of the device for the host). An event
/// is recorded at each boundary into or out of a device phase (h2d, forward, backward, comm, optimizer,
/// metrics). At a step's end, the earlier steps whose last event the device has passed (a non-blocking
/// query, in stream order) are resolved; nothing in the loop waits for the device. finish() waits once
/// for what is left, at the end of fit. The resolved steps form a PhaseStats of device time (the step
/// is the span from its first event to its last), warm-up steps excluded.
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
};

/// CUDA events on the current stream of CUDA device `index`; null where this libtorch has no CUDA.
std::unique_ptr<DeviceEventSource> make_cuda_event_source(int64_t index);

/// Whether the phase runs work on the device (h2d, forward, backward, comm, optimizer, metrics).
bool runs_on_device(Phase phase);

class DeviceTimer final : public PhaseBoundaryListener {
 public:
  DeviceTimer(std::unique_ptr<DeviceEventSource> source, int64_t warmup_steps);

  /// A phase boundary: `next` opens (nullopt: none). Records an event when the open phase or `next`
  /// runs on the device.
  void boundary(std::optional<Phase> next) override;
  /// Ends the step `host` (closing its open phase) and resolves the earlier steps the device has passed.
  void end_step(const StepRecord& host) override;
  /// Waits for the steps not yet resolved (the end of fit).
  void finish();

  /// The device's time per step and per device phase over the resolved steps.
  const PhaseStats& stats() const { return stats_; }
  /// Leaves `steps` more steps out (PhaseStats::extend_warmup).
  void extend_warmup(int64_t steps) { stats_.extend_warmup(steps); }
  /// The phases the resolved steps ran on the device, in step order.
  std::vector<Phase> measured_phases() const;
  /// Steps resolved without waiting, and in finish().
  int64_t resolved_in_loop() const { return resolved_in_loop_; }
  int64_t resolved_at_finish() const { return resolved_at_finish_; }

 private:
  struct Step {
    StepRecord record;  // labels; the durations are filled when resolved
    std::vector<std::pair<std::unique_ptr<DeviceEvent>, std::optional<Phase>>> marks;  // event, phase it opens
  };
  void resolve(Step& step);

  std::unique_ptr<DeviceEventSource> source_;
  PhaseStats stats_;
  Step current_;
  std::optional<Phase> open_;
  std::array<bool, kPhaseCount> measured_{};
  std::deque<Step> pending_;
  int64_t resolved_in_loop_ = 0, resolved_at_finish_ = 0;
};

}  // namespace fitscope
