#pragma once
// LayerProbe: times each layer's forward and backward on the steps it probes (one in `every`), and
// counts their floating-point operations: forward through libtorch's RecordFunction callbacks, added
// to the training thread for a probed step's forward phase only; backward by a pre- and a post-hook on
// each node of the autograd graph, hooked before the engine runs and unhooked after the step (both the
// same in 1.13 and 2.x). See fitscope/timing/layer_times.hpp for what a layer is.
//
// In forward, an operation is timed when no timed operation encloses it: the training thread's
// outermost operations. A forward operation's layer is the first of its inputs that is a parameter (or
// buffer) of the model; its autograd sequence number ties the backward node it made to that layer. A
// node is timed from its pre-hook to its post-hook (its gradients' computation and their checks; what
// the engine then does between nodes is no node's). The graph is found from the outputs of the timed
// forward operations and, in the standard step, from the tensor backward runs from (run_backward):
// nothing observes the operations inside backward, which a RecordFunction callback, even one doing
// nothing, slows by about half (the seed MLP's backward: 25.3 us, 36.7 us with such a callback, 26.0 us
// with a hook on each node); a post-hook keeps no gradient alive longer than AccumulateGrad expects,
// so that the probed step steals the gradients it would steal unprobed.
//
// Floating-point operations are counted at the matrix products and convolutions of forward (inside
// linear too), FlopCounterMode's way, and their backward's from the same operands, added to the node
// they made. A timed forward operation's bytes are its tensor inputs' and outputs' (a view's none),
// counted at its start and end, and its backward's the gradients of those that need one, counted then
// too. The probed step's forward and backward are the probe's own reading of the phases, less the
// probe's own work in them (its callbacks outside the timed spans, the hooking), each timed by itself.
//
// The probed step is measured against the unprobed steps' p50, and with `every` = 0 the probe
// spaces its steps so that their cost stays within `max_cost` of the run's step time. Before the first
// probed step, and before each with one step in more than kWarmAbove, the step before it is listened to
// the same way and its figures dropped: the probe's code and libtorch's observed paths, never run or not
// run for `every` steps, are out of the caches then, and a cold probed step of microsecond operations
// took twice as long as a warm one (seed MLP: +213 % one in 107, +63 % one in 8, +45 % every step; the
// first probe, cold, 188 us of forward and backward against 74 us for the warm ones after it). The
// warm-up is left out of the distributions and counted in the cost.
//
// On a GPU (a DeviceEventSource given) a layer's time is the device's: each timed operation and node
// records an event on its thread's current stream as it begins and ends (the stream its kernels go to;
// autograd's device thread runs a node, hooks included, on its forward's stream), and so does each
// boundary of the probed step's forward and backward phases; a probed step's events are read once the
// device has passed them, at a later step's record (a query, never a wait) or at finish(). The engine's
// row is then the device's time from the engine's start to its end less its nodes'. The host's clock
// still gives the probe's cost and the trace's spans (on a GPU: when the host enqueued each layer's
// work).
//
// One probe listens at a time in a process (another fit's probe skips its steps meanwhile). Used from
// the training thread; the hooks on autograd's threads take the probe's lock.

#include <array>
#include <atomic>
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
class Tensor;
}  // namespace at

namespace torch::autograd {
struct Node;
}  // namespace torch::autograd

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
  /// After the probed step's own work (forward, backward, optimizer): the callbacks and hooks removed.
  void stop_listening();
  /// Runs backward from `root` (StepContext::backward, on the training thread). Under a listening
  /// probe, it first hooks the nodes its forward's outputs did not reach (the loss's, recorded as one
  /// scope; the hooking is left out of the backward phase), and times the engine's run: the
  /// LayerTimes::kEngine row is that run less its nodes' spans.
  static void run_backward(const at::Tensor& root);
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

  /// Measured steps before the first probe: a reference p50 (the last of them the probe's warm-up).
  static constexpr int64_t kFirst = 4;
  /// Auto probes a fit of at least this many steps after its warm-up: a short fit's distributions
  /// need every step they have.
  static constexpr int64_t kFewestSteps = 64;
  /// Probes further apart than this many steps are each preceded by a warm-up step (the first always).
  static constexpr int64_t kWarmAbove = 8;

  /// While it listens, the probe is the clock's listener (the one before it told on): its RecordFunction
  /// callback is on in the forward phase only (one that held inputs in backward would hold each
  /// gradient, which AccumulateGrad then copies instead of taking: a weight's size more memory on a
  /// probed step); entering backward, it hooks the graph found so far. What it does at a boundary is
  /// in neither phase.
  void boundary(std::optional<Phase> next) override;
  void end_step(const StepRecord& record) override;

  // the callbacks' and hooks' side (layer_probe.cpp)
  struct Event;
  std::unique_ptr<at::ObserverContext> start(const at::RecordFunction& fn);
  void end(const at::RecordFunction& fn, Event& event);
  void node_starts(std::size_t node);
  void node_ends(std::size_t node);

 private:
  static constexpr int64_t kMinEvery = 8, kMaxEvery = 1000;

  /// Adds the RecordFunction callback (in forward) or removes it.
  void observe_operations(bool on);
  void add_backward_flops(int64_t node, double flops);
  double take_backward_flops(int64_t node);
  int row_of_input(const at::RecordFunction& fn);
  int row_of_node(int64_t sequence, const std::string& name);

  // backward: the nodes hooked on the probed step, each timed from its pre-hook to its post-hook
  struct NodeSpan {
    std::weak_ptr<torch::autograd::Node> node;  // unhooked after the step if it outlives it
    const void* start_hook;
    const void* end_hook;
    int row;
    int64_t sequence;
    int64_t start_ns = 0;
    std::unique_ptr<DeviceEvent> device_start;
  };
  std::vector<NodeSpan> nodes_;
  std::vector<std::shared_ptr<torch::autograd::Node>> roots_;  // the timed forward operations' outputs' nodes
  std::atomic<int64_t> nodes_ns_{0};  // the nodes' time on the host in the engine's run (run_backward)
  /// Hooks each node reachable from `root` that is not hooked yet.
  void hook_graph(std::shared_ptr<torch::autograd::Node> root);
  void unhook_graph();
  int row(const std::string& name);
  void add(int row, bool backward, int64_t ns, double flops, double forward_bytes = 0, double backward_bytes = 0);
  void fold(const StepRecord& record);
  /// A probed step's rows (their times and operations) and phases into the probes' sums.
  void add_probed_step(const std::vector<LayerTime>& rows, int64_t forward_ns, int64_t backward_ns);

  // on a GPU: the events of the probed steps, read once the device has passed them
  struct DeviceSpan {
    int row;  // kPhaseSpan: the step's forward or backward phase
    bool backward;
    bool engine = false;  // the engine's run: its row gets it less the nodes' spans
    std::unique_ptr<DeviceEvent> from, to;
  };
  struct DeviceStep {
    std::vector<LayerTime> rows;  // their operations; their times from the spans
    std::vector<DeviceSpan> spans;
  };
  std::unique_ptr<DeviceEvent> record_event();  // under the probe's lock (autograd's threads record too)
  void keep_device_span(int row, bool backward, std::unique_ptr<DeviceEvent> from, std::unique_ptr<DeviceEvent> to,
                        bool engine = false);
  /// Reads the probed steps the device has passed, in order; `wait`: waits for all.
  void resolve(bool wait);
  std::unique_ptr<DeviceEventSource> device_;
  std::vector<DeviceSpan> device_spans_;    // the probed step's, as it runs
  std::unique_ptr<DeviceEvent> phase_from_;  // the open forward or backward phase's first event
  std::vector<DeviceStep> device_steps_;    // probed, not read yet

  Model& model_;
  StepClock& clock_;
  PhaseBoundaryListener* told_ = nullptr;  // the clock's listener before the probe's step
  bool observing_ = false;  // the RecordFunction callback is on
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
  struct Span {
    int row;  // kPhaseSpan: the probed step's forward or backward phase itself, the layers' parent
    bool backward;
    int64_t start_ns, dur_ns;
  };
  std::vector<Span> spans_;  // reserved for kSpansKept when the probe is made
  static constexpr int kPhaseSpan = -1;
  std::optional<Phase> phase_open_;  // forward or backward, open since phase_start_ns_ on a probed step
  int64_t phase_start_ns_ = 0;
  std::array<int64_t, 2> phase_ns_{};  // the probed step's forward and backward, the probe's own work left out
  int64_t own_ns_ = 0;  // the probe's own work in the open phase: callbacks outside the timed spans, hooking
  /// At each boundary of a probed step: the forward or backward phase that closes becomes a span; the
  /// one that opens (`next`) starts.
  void close_phase_span();
  void open_phase_span(std::optional<Phase> next);
  void keep_span(const Span& span);
  StreamingQuantiles unprobed_;  // the measured steps' own time, the probes' reference
  double cost_sum_ = 0;
  int64_t costs_ = 0;
  LayerTimes times_;
};

}  // namespace fitscope::detail
