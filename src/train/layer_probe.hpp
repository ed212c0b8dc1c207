#pragma once
// LayerProbe: times each layer's forward and backward on the steps it probes (one in `every`), and
// counts their floating-point operations, through libtorch's RecordFunction callbacks (the same in
// 1.13 and 2.x), added to the training thread for a probed step only (autograd's threads inherit them)
// and removed after its work. See fitscope/timing/layer_times.hpp for what a layer is.
//
// An operation is timed when no timed operation encloses it on its thread: in the forward phase, the
// training thread's outermost operations; in backward, each autograd node. A forward operation's layer
// is the first of its inputs that is a parameter (or buffer) of the model; its autograd sequence number
// ties the backward node it made to that layer. Floating-point operations are counted at the matrix
// products and convolutions of forward (inside linear too), FlopCounterMode's way, and their backward's
// from the same operands, added to the node they made. A timed forward operation's bytes are its tensor
// inputs' and outputs' (a view's none), counted at its start and end, and its backward's the gradients
// of those that need one, counted then too. The probed step is measured against the unprobed steps' p50, and with `every` = 0 the probe
// spaces its steps so that their cost stays within `max_cost` of the run's step time. With one step in
// more than kWarmAbove, the step before each probed one is listened to the same way and its figures
// dropped: the probe's code and libtorch's observed paths, not run for `every` steps, are out of the
// caches then, and a cold probed step of microsecond operations took twice as long as a warm one (seed
// MLP: +213 % one in 107, +63 % one in 8, +45 % every step). The warm-up is left out of the
// distributions and counted in the cost.
//
// On a GPU (a DeviceEventSource given) a layer's time is the device's: each timed operation records an
// event on its thread's current stream as it begins and ends (the stream its kernels go to; autograd's
// device thread runs a node on its forward's stream), and so does each boundary of the probed step's
// forward and backward phases; a probed step's events are read once the device has passed them, at a
// later step's record (a query, never a wait) or at finish(). The host's clock still gives the probe's
// cost and the trace's spans (on a GPU: when the host enqueued each layer's work).
//
// One probe listens at a time in a process (another fit's probe skips its steps meanwhile). Used from
// the training thread; the callbacks on autograd's threads take the probe's lock.

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "fitscope/models/model.hpp"
#include "fitscope/timing/device_timer.hpp"
#include "fitscope/timing/layer_times.hpp"
#include "fitscope/timing/step_clock.hpp"
#include "fitscope/timing/streaming_quantiles.hpp"
#include "fitscope/timing/thread_span.hpp"

namespace at {
class RecordFunction;
struct ObserverContext;
}  // namespace at

namespace fitscope::detail {

/// The user scope the standard step records its loss in (the `loss` row).
inline constexpr const char* kLossScope = "fitscope::loss";

class LayerProbe final : public PhaseBoundaryListener {
 public:
  /// `every` 0: chosen from the measured cost; `why_not` non-empty: never probes, and says why;
  /// `device`: the events that time a GPU's layers (null on a CPU: the host's clock times them).
  LayerProbe(Model& model, StepClock& clock, int64_t every, double max_cost, std::string why_not,
             std::unique_ptr<DeviceEventSource> device = nullptr);
  ~LayerProbe() override;
  LayerProbe(const LayerProbe&) = delete;
  LayerProbe& operator=(const LayerProbe&) = delete;

  /// Before a step that the distributions would measure (its index among them: 0, 1, ...): whether it
  /// is probed; if so, the probe listens until stop_listening().
  bool begin_step(int64_t measured_index);
  /// After the probed step's own work (forward, backward, optimizer): the callbacks removed.
  void stop_listening();
  /// Every step's record (`measured_index` < 0 in the warm-up): a probed one is folded in, against the
  /// unprobed steps' p50 so far.
  void record(const StepRecord& record, int64_t measured_index);
  /// The timed spans of the first probed steps (at most kSpansKept), each a layer's forward or backward
  /// on the trace's track kSpanTrack, nested in its step's forward or backward phase, on that track too
  /// at its own times (the phases' track lays a step's phases end to end); handed over once.
  std::vector<ThreadSpan> take_spans();
  static constexpr const char* kSpanTrack = "layers (probed steps)";
  static constexpr std::size_t kSpansKept = 4096;

  /// At the fit's end: waits for the device to pass the probed steps' events not read yet.
  void finish() { resolve(/*wait=*/true); }
  /// What the probes found; with none probed, why not (`graph_kept`: the fit replayed a CUDA graph).
  LayerTimes times(bool graph_kept) const;

  static constexpr int64_t kFirst = 4;  ///< measured steps before the first probe: a reference p50
  /// Auto probes a fit of at least this many steps after its warm-up: a short fit's distributions
  /// need every step they have.
  static constexpr int64_t kFewestSteps = 64;
  /// Probes further apart than this many steps are each preceded by a warm-up step.
  static constexpr int64_t kWarmAbove = 8;

  /// While it listens, the probe is the clock's listener (the one before it told on): in the backward
  /// phase its callback holds no operation's inputs (one that did would hold each gradient, which
  /// AccumulateGrad then copies instead of taking: a weight's size more memory on a probed step).
  void boundary(std::optional<Phase> next) override;
  void end_step(const StepRecord& record) override;

  // the callbacks' side (layer_probe.cpp)
  struct Event;
  std::unique_ptr<at::ObserverContext> start(const at::RecordFunction& fn);
  void end(const at::RecordFunction& fn, Event& event);

 private:
  static constexpr int64_t kMinEvery = 8, kMaxEvery = 1000;

  /// Adds the callback of forward (with inputs) or of backward (without), in place of the other.
  void listen(bool backward);
  void add_backward_flops(int64_t node, double flops);
  double take_backward_flops(int64_t node);
  int row_of_input(const at::RecordFunction& fn);
  int row_of_node(const at::RecordFunction& fn);
  int row(const std::string& name);
  void add(int row, bool backward, int64_t ns, double flops, double forward_bytes = 0, double backward_bytes = 0);
  void fold(const StepRecord& record);
  /// A probed step's rows (their times and operations) and phases into the probes' sums.
  void add_probed_step(const std::vector<LayerTime>& rows, int64_t forward_ns, int64_t backward_ns, double other_flops);

  // on a GPU: the events of the probed steps, read once the device has passed them
  struct DeviceSpan {
    int row;  // kPhaseSpan: the step's forward or backward phase
    bool backward;
    std::unique_ptr<DeviceEvent> from, to;
  };
  struct DeviceStep {
    std::vector<LayerTime> rows;  // their operations; their times from the spans
    std::vector<DeviceSpan> spans;
    double other_flops;
  };
  std::unique_ptr<DeviceEvent> record_event();  // under the probe's lock (autograd's threads record too)
  void keep_device_span(int row, bool backward, std::unique_ptr<DeviceEvent> from, std::unique_ptr<DeviceEvent> to);
  /// Reads the probed steps the device has passed, in order; `wait`: waits for all.
  void resolve(bool wait);
  std::unique_ptr<DeviceEventSource> device_;
  std::vector<DeviceSpan> device_spans_;    // the probed step's, as it runs
  std::unique_ptr<DeviceEvent> phase_from_;  // the open forward or backward phase's first event
  std::vector<DeviceStep> device_steps_;    // probed, not read yet

  Model& model_;
  StepClock& clock_;
  PhaseBoundaryListener* told_ = nullptr;  // the clock's listener before the probe's step
  bool backward_callback_ = false;
  double max_cost_;
  int64_t next_ = kFirst;
  int64_t probing_index_ = 0;
  bool listening_ = false;
  bool warming_ = false;  // the step listened to is the warm-up before a probed step
  int64_t warm_index_ = -1, warm_ns_ = 0;  // that step's index and time: the probe's cost with the probed step's
  uint64_t handle_ = 0;
  /// Indexes the model's parameters and buffers by TensorImpl, again only when they changed.
  void index_parameters();

  // Nothing here is allocated anew on a probed step once the first probes have named their rows: an
  // allocation that outlives the step, made while the step's large tensors are freed, lands in their
  // hole, and the C library's heap then grows by a tensor per probe (16.7 MB a probe, seen).
  std::mutex mutex_;
  std::vector<const void*> indexed_;                              // the TensorImpls indexed
  std::unordered_map<const void*, std::size_t> parameter_layer_;  // TensorImpl -> its layer's name
  std::vector<std::string> parameter_layers_;
  int64_t first_sequence_ = 0;     // the autograd sequence number at the probed step's start
  std::vector<int> sequence_rows_;  // sequence number - first_sequence_ -> row, -1 none
  std::vector<double> backward_flops_;  // sequence number - first_sequence_ -> its node's count, to come
  std::vector<LayerTime> step_;     // the rows, their figures the probed step's (names kept across steps)
  std::unordered_map<std::string, int> rows_;
  double step_other_flops_ = 0;
  struct Span {
    int row;  // kPhaseSpan: the probed step's forward or backward phase itself, the layers' parent
    bool backward;
    int64_t start_ns, dur_ns;
  };
  std::vector<Span> spans_;  // reserved for kSpansKept when the probe is made
  static constexpr int kPhaseSpan = -1;
  static constexpr int kNoRow = -3;  // a device span no layer takes (outside the phases)
  std::optional<Phase> phase_open_;  // forward or backward, open since phase_start_ns_ on a probed step
  int64_t phase_start_ns_ = 0;
  /// At each boundary of a probed step: the forward or backward phase that closes becomes a span.
  void close_phase_span(std::optional<Phase> next);
  void keep_span(const Span& span);
  StreamingQuantiles unprobed_;  // the measured steps' own time, the probes' reference
  double cost_sum_ = 0;
  int64_t costs_ = 0;
  LayerTimes times_;
};

}  // namespace fitscope::detail
