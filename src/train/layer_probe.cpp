#include "layer_probe.hpp"

#include <ATen/SequenceNumber.h>
#include <ATen/record_function.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>
#include <utility>

namespace fitscope::detail {

/// What an operation's start leaves for its end.
struct LayerProbe::Event : at::ObserverContext {
  bool timed = false;  // the outermost timed operation on its thread
  int row = -1;        // the layer its time and operations go to
  int64_t start_ns = 0;
  double flops = 0;
  // a convolution's input and weight shapes, counted with its output at its end
  bool convolution = false, transposed = false;
  std::vector<int64_t> x, w;
  int64_t node = -1;      // the autograd node this forward operation makes (its sequence number)
  int gradients = 0;      // its operands that need a gradient: its backward's count, times its own
  std::unique_ptr<DeviceEvent> device_start;  // on a GPU: recorded as the operation began
  // a timed operation's bytes: its inputs' (counted at its start, where they are valid), and which
  // tensors its first inputs are, so that its end tells a view of one (no bytes) from an output; its
  // backward's, the gradients of its inputs that need one and of its outputs
  double bytes = 0, backward_bytes = 0;
  struct Operand {
    const void* tensor = nullptr;
    const void* storage = nullptr;
  };
  std::array<Operand, 8> operands{};
  std::size_t operand_count = 0;
};

namespace {

std::atomic<LayerProbe*> listening_probe{nullptr};
std::thread::id training_thread;

// the timed operation open on this thread, if any: what the operations inside it add to
thread_local LayerProbe::Event* open_event = nullptr;

using torch::autograd::variable_list;

/// A node's hooks: its pre-hook starts its span, its post-hook ends it (the node's index in the
/// probe's nodes_). They pass the gradients on as they are.
struct NodeStart final : torch::autograd::FunctionPreHook {
  NodeStart(LayerProbe& p, std::size_t n) : probe(p), node(n) {}
  variable_list operator()(const variable_list& grads) override {
    probe.node_starts(node);
    return grads;
  }
  LayerProbe& probe;
  std::size_t node;
};

struct NodeEnd final : torch::autograd::FunctionPostHook {
  NodeEnd(LayerProbe& p, std::size_t n) : probe(p), node(n) {}
  variable_list operator()(const variable_list& outputs, const variable_list& /*inputs*/) override {
    probe.node_ends(node);
    return outputs;
  }
  LayerProbe& probe;
  std::size_t node;
};

/// Removes the hook at `hook` from `hooks`, if there.
template <typename Hooks>
void remove_hook(Hooks& hooks, const void* hook) {
  hooks.erase(std::remove_if(hooks.begin(), hooks.end(), [&](const auto& h) { return h.get() == hook; }), hooks.end());
}

int64_t now_ns() { return std::chrono::steady_clock::now().time_since_epoch().count(); }

std::vector<int64_t> sizes(const c10::IValue& v) {
  if (!v.isTensor() || !v.toTensor().defined()) return {};
  return v.toTensor().sizes().vec();
}

double product(const std::vector<int64_t>& dims, std::size_t from = 0) {
  double p = 1;
  for (std::size_t i = from; i < dims.size(); ++i) p *= static_cast<double>(dims[i]);
  return p;
}

/// A convolution's multiply-adds times 2 (FlopCounterMode's conv_flop_count): the batch, the weight's
/// elements, and the spatial size of the output (of the input for a transposed convolution).
double convolution_flops(const std::vector<int64_t>& x, const std::vector<int64_t>& w, const std::vector<int64_t>& out,
                         bool transposed) {
  const std::vector<int64_t>& spatial = transposed ? x : out;
  if (x.empty() || w.empty() || spatial.size() < 2) return 0;
  return 2.0 * static_cast<double>(x[0]) * product(w) * product(spatial, 2);
}

/// (M, K) x (K, N) from two inputs: 2MKN, times a leading batch for bmm.
double product_flops(const c10::IValue& a, const c10::IValue& b) {
  const std::vector<int64_t> x = sizes(a), y = sizes(b);
  if (x.size() < 2 || y.size() != x.size()) return 0;
  return 2.0 * product(x) * static_cast<double>(y.back());
}

using Inputs = c10::ArrayRef<const c10::IValue>;

/// Each defined tensor of `v`: itself, or a tensor list's.
template <typename Visit>
void each_tensor(const c10::IValue& v, Visit visit) {
  if (v.isTensor()) {
    if (v.toTensor().defined()) visit(v.toTensor());
  } else if (v.isTensorList()) {
    const c10::List<at::Tensor> list = v.toTensorList();
    for (std::size_t i = 0; i < list.size(); ++i) {
      const at::Tensor t = list.get(i);
      if (t.defined()) visit(t);
    }
  }
}

/// The bytes a tensor spans: its elements', at most its storage's (a broadcast's repeated elements are
/// read once).
double tensor_bytes(const at::Tensor& t) {
  const double elements = static_cast<double>(t.numel()) * static_cast<double>(t.element_size());
  return t.has_storage() ? std::min(elements, static_cast<double>(t.storage().nbytes())) : elements;
}

const void* storage_of(const at::Tensor& t) { return t.has_storage() ? t.storage().unsafeGetStorageImpl() : nullptr; }

/// A timed forward operation's inputs: their bytes (and their gradients', written in backward, for those
/// that need one), and the first ones' tensors and storages.
void count_inputs(LayerProbe::Event& e, Inputs inputs) {
  for (const c10::IValue& v : inputs) {
    each_tensor(v, [&](const at::Tensor& t) {
      const double bytes = tensor_bytes(t);
      e.bytes += bytes;
      if (t.requires_grad()) e.backward_bytes += bytes;
      if (e.operand_count < e.operands.size()) e.operands[e.operand_count++] = {t.unsafeGetTensorImpl(), storage_of(t)};
    });
  }
}

/// Its outputs: each one's bytes written (its gradient's read in backward, when it needs one), an input
/// written in place too; a view of an input (the input's storage, another tensor) writes nothing, and
/// an operation whose every output is a view moved nothing at all, nor does its backward (a reshape, a
/// transpose).
template <typename Outputs>
void count_outputs(LayerProbe::Event& e, const Outputs& outputs) {
  bool moved = false, any = false;
  double written = 0, gradients = 0;
  for (const c10::IValue& v : outputs) {
    each_tensor(v, [&](const at::Tensor& t) {
      any = true;
      const auto from = e.operands.begin(), to = from + static_cast<std::ptrdiff_t>(e.operand_count);
      const bool in_place = std::any_of(from, to, [&](const auto& o) { return o.tensor == t.unsafeGetTensorImpl(); });
      const void* storage = storage_of(t);
      const bool view = !in_place && storage && std::any_of(from, to, [&](const auto& o) { return o.storage == storage; });
      if (view) return;
      const double bytes = tensor_bytes(t);
      written += bytes;
      if (t.requires_grad()) gradients += bytes;
      moved = true;
    });
  }
  const bool counted = moved || !any;
  e.bytes = counted ? e.bytes + written : 0.0;
  e.backward_bytes = counted ? e.backward_bytes + gradients : 0.0;
}

/// The operations whose floating-point operations are counted, FlopCounterMode's: one entry per
/// operator, the count from its inputs (a convolution's output shape comes at its end). Its backward
/// counts as much again for each of its two operands (`a`, `b`) that needs a gradient, as
/// FlopCounterMode's mm/addmm/bmm/convolution_backward formulas do: that count is made here, in
/// forward, and added to the node the operation made, so that backward runs with no callback that
/// holds its operations' inputs (an input held is a gradient AccumulateGrad then copies).
struct FlopRule {
  const char* op;
  double (*count)(Inputs in);
  std::size_t a, b;
};

const FlopRule kFlopRules[] = {
    {"aten::mm", [](Inputs in) { return in.size() >= 2 ? product_flops(in[0], in[1]) : 0.0; }, 0, 1},
    {"aten::addmm", [](Inputs in) { return in.size() >= 3 ? product_flops(in[1], in[2]) : 0.0; }, 1, 2},
    {"aten::bmm", [](Inputs in) { return in.size() >= 2 ? product_flops(in[0], in[1]) : 0.0; }, 0, 1},
    {"aten::baddbmm", [](Inputs in) { return in.size() >= 3 ? product_flops(in[1], in[2]) : 0.0; }, 1, 2},
    {"aten::convolution", nullptr, 0, 1},  // counted at its end, from its output's shape
};

bool needs_gradient(Inputs in, std::size_t i) {
  return i < in.size() && in[i].isTensor() && in[i].toTensor().defined() && in[i].toTensor().requires_grad();
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  LayerProbe* probe = listening_probe.load();
  return probe ? probe->start(fn) : nullptr;
}

void on_end(const at::RecordFunction& fn, at::ObserverContext* context) {
  LayerProbe* probe = listening_probe.load();
  if (probe && context) probe->end(fn, static_cast<LayerProbe::Event&>(*context));
}

/// "(model) max_pool2d": an operation outside the layers with parameters, by its name
std::string outside_layers(const char* op) {
  std::string name = op;
  for (const char* prefix : {"aten::", "torch::autograd::"}) {
    if (name.rfind(prefix, 0) == 0) name.erase(0, std::strlen(prefix));
  }
  return std::string(LayerTimes::kModel) + " " + name;
}

std::string layer_of(const std::string& tensor_name) {
  const auto dot = tensor_name.rfind('.');
  return dot == std::string::npos ? LayerTimes::kModel : tensor_name.substr(0, dot);
}

}  // namespace

LayerProbe::LayerProbe(Model& model, StepClock& clock, int64_t every, double max_cost, std::string why_not,
                       std::unique_ptr<DeviceEventSource> device)
    : device_(std::move(device)), model_(model), clock_(clock), max_cost_(max_cost) {
  times_.every = why_not.empty() ? (every > 0 ? every : kMinEvery) : 0;
  times_.auto_every = why_not.empty() && every <= 0;
  times_.why_not = std::move(why_not);
  times_.device_clock = device_ != nullptr && times_.every > 0;
  if (times_.every > 0) spans_.reserve(kSpansKept);
}

LayerProbe::~LayerProbe() { stop_listening(); }

bool LayerProbe::begin_step(int64_t measured_index) {
  // the first probe, and each of one in more than kWarmAbove: the step before it is listened to as well,
  // its figures dropped
  warming_ = (next_ == kFirst || times_.every > kWarmAbove) && measured_index == next_ - 1;
  if (times_.every == 0 || (measured_index != next_ && !warming_)) return false;
  if (!warming_) next_ += times_.every;
  LayerProbe* none = nullptr;
  if (!listening_probe.compare_exchange_strong(none, this)) return false;  // another fit's probe listens
  training_thread = std::this_thread::get_id();
  (warming_ ? warm_index_ : probing_index_) = measured_index;
  index_parameters();
  first_sequence_ = static_cast<int64_t>(at::sequence_number::peek());
  sequence_rows_.clear();  // keeps its capacity
  backward_flops_.clear();
  for (LayerTime& l : step_) l = LayerTime{std::move(l.name)};
  phase_ns_.fill(0);
  told_ = clock_.listener();
  clock_.set_listener(this);
  listening_ = true;
  observe_operations(clock_.open_phase() == Phase::forward);
  open_phase_span(clock_.open_phase());
  return true;
}

void LayerProbe::boundary(std::optional<Phase> next) {
  if (told_) told_->boundary(next);
  close_phase_span();
  observe_operations(next == Phase::forward);
  if (next == Phase::backward) {  // the graph the forward's timed operations made, hooked before the engine runs it
    for (std::shared_ptr<torch::autograd::Node>& root : roots_) hook_graph(std::move(root));
    roots_.clear();
  }
  open_phase_span(next);
}

void LayerProbe::run_backward(const at::Tensor& root) {
  LayerProbe* probe = listening_probe.load();
  if (!probe || std::this_thread::get_id() != training_thread || probe->phase_open_ != Phase::backward) {
    root.backward();
    return;
  }
  const int64_t from = now_ns();
  probe->hook_graph(root.grad_fn());
  const int64_t hooked = now_ns();
  probe->own_ns_ += hooked - from;  // the probe's own work: out of the backward phase
  const int engine = probe->row(LayerTimes::kEngine);
  std::unique_ptr<DeviceEvent> device_from = probe->device_ ? probe->record_event() : nullptr;
  probe->nodes_ns_ = 0;
  try {
    root.backward();
  } catch (...) {  // a failed backward's run is no figure: its event given back
    if (device_from) probe->device_->release(std::move(device_from));
    throw;
  }
  if (device_from) {  // less the nodes' spans once read
    probe->keep_device_span(engine, true, std::move(device_from), probe->record_event(), true);
  } else {
    probe->add(engine, true, std::max<int64_t>(0, now_ns() - hooked - probe->nodes_ns_), 0);
  }
}

void LayerProbe::hook_graph(std::shared_ptr<torch::autograd::Node> root) {
  std::vector<std::shared_ptr<torch::autograd::Node>> todo{std::move(root)};
  while (!todo.empty()) {
    std::shared_ptr<torch::autograd::Node> node = std::move(todo.back());
    todo.pop_back();
    if (!node) continue;
    auto& pre = node->pre_hooks();
    const bool hooked = std::any_of(pre.begin(), pre.end(), [&](const auto& h) {
      const auto* start = dynamic_cast<const NodeStart*>(h.get());
      return start && &start->probe == this;
    });
    if (hooked) continue;
    const std::size_t index = nodes_.size();
    auto start = std::make_unique<NodeStart>(*this, index);
    auto end = std::make_unique<NodeEnd>(*this, index);
    const auto sequence = static_cast<int64_t>(node->sequence_nr());
    nodes_.push_back({node, start.get(), end.get(), row_of_node(sequence, node->name()), sequence, 0, nullptr});
    // first among the pre-hooks and last among the post-hooks: the span holds the node's other hooks
    pre.insert(pre.begin(), std::move(start));
    node->add_post_hook(std::move(end));
    for (const torch::autograd::Edge& edge : node->next_edges()) {
      if (edge.function) todo.push_back(edge.function);
    }
  }
}

void LayerProbe::unhook_graph() {
  for (NodeSpan& n : nodes_) {
    if (n.device_start) device_->release(std::move(n.device_start));  // a node begun, not ended (it threw)
    const std::shared_ptr<torch::autograd::Node> node = n.node.lock();
    if (!node) continue;  // gone with the step's graph
    remove_hook(node->pre_hooks(), n.start_hook);
    remove_hook(node->post_hooks(), n.end_hook);
  }
  nodes_.clear();
  roots_.clear();
}

void LayerProbe::node_starts(std::size_t index) {
  NodeSpan& n = nodes_[index];
  const double flops = take_backward_flops(n.sequence);  // counted in forward (kFlopRules)
  if (flops > 0) add(n.row, true, 0, flops);
  if (device_) n.device_start = record_event();
  n.start_ns = now_ns();
}

void LayerProbe::node_ends(std::size_t index) {
  const int64_t end = now_ns();
  NodeSpan& n = nodes_[index];
  if (!device_) add(n.row, true, end - n.start_ns, 0);  // on a GPU the events give the time, once read (resolve)
  nodes_ns_ += end - n.start_ns;
  if (!warming_) keep_span({n.row, true, n.start_ns, end - n.start_ns});
  if (n.device_start) keep_device_span(n.row, true, std::move(n.device_start), record_event());
}

void LayerProbe::end_step(const StepRecord& record) {
  if (told_) told_->end_step(record);
}

void LayerProbe::observe_operations(bool on) {
  if (on == observing_) return;
  observing_ = on;
  if (!on) {
    at::removeCallback(handle_);
    return;
  }
  // each operation's inputs (the parameters that name its layer, the shapes that count its operations)
  // and outputs (their bytes, and the nodes they are the gradients of)
  handle_ = at::addThreadLocalCallback(at::RecordFunctionCallback(&on_start, &on_end)
                                           .needsInputs(true)
                                           .needsOutputs(true)
                                           .scopes({at::RecordScope::FUNCTION, at::RecordScope::USER_SCOPE}));
}

void LayerProbe::index_parameters() {
  const auto state = model_.named_state();
  std::vector<const void*> impls;
  impls.reserve(state.size());
  for (const auto& entry : state) impls.push_back(entry.second.unsafeGetTensorImpl());
  if (impls == indexed_) return;
  indexed_ = std::move(impls);
  parameter_layer_.clear();
  parameter_layers_.clear();
  for (const auto& [name, tensor] : state) {
    parameter_layer_[tensor.unsafeGetTensorImpl()] = parameter_layers_.size();
    parameter_layers_.push_back(layer_of(name));
  }
}

std::vector<ThreadSpan> LayerProbe::take_spans() {
  std::vector<ThreadSpan> spans;
  spans.reserve(spans_.size());
  for (const Span& s : spans_) {
    const std::string what = s.backward ? "backward" : "forward";
    spans.push_back({kSpanTrack, s.row == kPhaseSpan ? what : step_[static_cast<std::size_t>(s.row)].name + " " + what,
                     s.start_ns, s.dur_ns});
  }
  spans_.clear();
  return spans;
}

void LayerProbe::stop_listening() {
  if (!listening_) return;
  close_phase_span();
  observe_operations(false);
  unhook_graph();
  listening_ = false;
  if (clock_.listener() == this) clock_.set_listener(told_);
  told_ = nullptr;
  listening_probe.store(nullptr);
}

int LayerProbe::row(const std::string& name) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto [at, made] = rows_.emplace(name, static_cast<int>(step_.size()));
  if (made) step_.push_back(LayerTime{name});
  return at->second;
}

int LayerProbe::row_of_input(const at::RecordFunction& fn) {
  if (std::strcmp(fn.name(), kLossScope) == 0) return row(LayerTimes::kLoss);
  for (const c10::IValue& v : fn.inputs()) {
    if (!v.isTensor()) continue;
    const auto found = parameter_layer_.find(v.toTensor().unsafeGetTensorImpl());
    if (found != parameter_layer_.end()) return row(parameter_layers_[found->second]);
  }
  return row(outside_layers(fn.name()));
}

int LayerProbe::row_of_node(int64_t sequence, const std::string& name) {
  const int64_t at = sequence - first_sequence_;
  const int found = at >= 0 && at < static_cast<int64_t>(sequence_rows_.size()) ? sequence_rows_[static_cast<std::size_t>(at)] : -1;
  return found >= 0 ? found : row(outside_layers(name.c_str()));
}

std::unique_ptr<at::ObserverContext> LayerProbe::start(const at::RecordFunction& fn) {
  const char* name = fn.name();
  const bool forward = std::this_thread::get_id() == training_thread && clock_.open_phase() == Phase::forward;
  if (!forward) return nullptr;  // the callback is on in forward only, on the training thread
  const bool timed = !open_event;
  const int64_t entered = timed ? now_ns() : 0;
  const int row = timed ? row_of_input(fn) : open_event->row;
  // the node made inside this operation takes the next sequence number: the last operation to see a
  // number is the one that made its node (a custom autograd function's too, which no operator
  // records). Written on the training thread, before backward reads it.
  const int64_t sequence = static_cast<int64_t>(at::sequence_number::peek());
  const int64_t at = sequence - first_sequence_;
  if (at >= 0) {
    if (at >= static_cast<int64_t>(sequence_rows_.size())) {
      sequence_rows_.resize(static_cast<std::size_t>(at) + 1, -1);
      backward_flops_.resize(sequence_rows_.size(), 0.0);
    }
    sequence_rows_[static_cast<std::size_t>(at)] = row;
  }
  const FlopRule* rule = nullptr;
  for (const FlopRule& r : kFlopRules) {
    if (std::strcmp(name, r.op) == 0) rule = &r;
  }
  if (!timed && !rule) return nullptr;  // most operations: inside a timed one, no count of their own

  auto event = std::make_unique<Event>();
  event->timed = timed;
  event->row = row;
  if (rule) {
    event->node = sequence;
    event->gradients = needs_gradient(fn.inputs(), rule->a) + needs_gradient(fn.inputs(), rule->b);
  }
  if (rule && rule->count) {
    event->flops = rule->count(fn.inputs());
    add_backward_flops(event->node, event->gradients * event->flops);
  } else if (rule && fn.inputs().size() >= 7 && fn.inputs()[6].isBool()) {  // a convolution: its output at its end
    event->convolution = true;
    event->transposed = fn.inputs()[6].toBool();
    event->x = sizes(fn.inputs()[0]);
    event->w = sizes(fn.inputs()[1]);
  }
  if (timed) {
    count_inputs(*event, fn.inputs());
    open_event = event.get();
    if (device_) event->device_start = record_event();
    event->start_ns = now_ns();
    own_ns_ += event->start_ns - entered;
  }
  return event;
}

void LayerProbe::end(const at::RecordFunction& fn, Event& event) {
  const int64_t end = event.timed ? now_ns() : 0;
  if (event.convolution && !fn.outputs().empty()) {
    event.flops += convolution_flops(event.x, event.w, sizes(fn.outputs()[0]), event.transposed);
    add_backward_flops(event.node, event.gradients * event.flops);
  }
  if (event.timed) {
    open_event = nullptr;
    count_outputs(event, fn.outputs());
    for (const c10::IValue& v : fn.outputs()) {  // the nodes backward will run: hooked as it begins
      each_tensor(v, [&](const at::Tensor& t) {
        if (t.grad_fn()) roots_.push_back(t.grad_fn());
      });
    }
  }
  // on a GPU the events give the time, once read (resolve)
  // its backward's bytes too, counted now: a training step's backward runs through every output that needs a gradient
  add(event.row, false, event.timed && !device_ ? end - event.start_ns : 0, event.flops, event.bytes, event.backward_bytes);
  if (event.timed && !warming_) keep_span({event.row, false, event.start_ns, end - event.start_ns});
  if (event.device_start) keep_device_span(event.row, false, std::move(event.device_start), record_event());
  if (event.timed) own_ns_ += now_ns() - end;
}

std::unique_ptr<DeviceEvent> LayerProbe::record_event() {
  const std::lock_guard<std::mutex> lock(mutex_);
  return device_->record();
}

void LayerProbe::keep_device_span(int row, bool backward, std::unique_ptr<DeviceEvent> from, std::unique_ptr<DeviceEvent> to,
                                  bool engine) {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (warming_) {  // the warm-up's events (recorded so that their calls are warm too), read no further
    device_->release(std::move(from));
    device_->release(std::move(to));
    return;
  }
  device_spans_.push_back({row, backward, engine, std::move(from), std::move(to)});
}

void LayerProbe::resolve(bool wait) {
  std::size_t read = 0;
  for (; read < device_steps_.size(); ++read) {
    DeviceStep& step = device_steps_[read];
    // the device passes a stream's events in order: the step's last one first, then each (a node run
    // on a stream of its own passes on its own)
    if (!step.spans.empty()) {
      DeviceEvent& last = *step.spans.back().to;
      if (wait) device_->wait(last);
      if (!device_->done(last)) break;
    }
    bool passed = true;
    for (const DeviceSpan& s : step.spans) {
      for (DeviceEvent* e : {s.from.get(), s.to.get()}) {
        if (wait && !device_->done(*e)) device_->wait(*e);
        passed = passed && device_->done(*e);
      }
    }
    if (!passed) break;
    int64_t forward_ns = 0, backward_ns = 0, nodes_ns = 0, engine_ns = 0;
    int engine = -1;
    for (DeviceSpan& s : step.spans) {
      const auto ns = static_cast<int64_t>(std::llround(device_->elapsed_ms(*s.from, *s.to) * 1e6));
      if (s.row == kPhaseSpan) {
        (s.backward ? backward_ns : forward_ns) += ns;
      } else if (s.engine) {
        engine = s.row;
        engine_ns += ns;
      } else {
        LayerTime& l = step.rows[static_cast<std::size_t>(s.row)];
        (s.backward ? l.backward_ns : l.forward_ns) += ns;
        if (s.backward) nodes_ns += ns;
      }
      device_->release(std::move(s.from));
      device_->release(std::move(s.to));
    }
    if (engine >= 0) step.rows[static_cast<std::size_t>(engine)].backward_ns += std::max<int64_t>(0, engine_ns - nodes_ns);
    add_probed_step(step.rows, forward_ns, backward_ns);
  }
  device_steps_.erase(device_steps_.begin(), device_steps_.begin() + static_cast<std::ptrdiff_t>(read));
}

void LayerProbe::keep_span(const Span& span) {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (spans_.size() < kSpansKept) spans_.push_back(span);
}

void LayerProbe::close_phase_span() {
  if (!phase_open_) return;
  const bool backward = *phase_open_ == Phase::backward;
  const int64_t now = now_ns();
  phase_ns_[backward] += now - phase_start_ns_ - own_ns_;
  own_ns_ = 0;
  if (!warming_) keep_span({kPhaseSpan, backward, phase_start_ns_, now - phase_start_ns_});
  if (phase_from_) keep_device_span(kPhaseSpan, backward, std::move(phase_from_), record_event());
  phase_open_.reset();
}

void LayerProbe::open_phase_span(std::optional<Phase> next) {
  if (next != Phase::forward && next != Phase::backward) return;
  phase_open_ = next;
  phase_start_ns_ = now_ns();
  own_ns_ = 0;
  if (device_) phase_from_ = record_event();
}

void LayerProbe::add_backward_flops(int64_t node, double flops) {
  const int64_t at = node - first_sequence_;
  if (at >= 0 && at < static_cast<int64_t>(backward_flops_.size())) backward_flops_[static_cast<std::size_t>(at)] += flops;
}

double LayerProbe::take_backward_flops(int64_t node) {
  const int64_t at = node - first_sequence_;
  if (at < 0 || at >= static_cast<int64_t>(backward_flops_.size())) return 0;
  return std::exchange(backward_flops_[static_cast<std::size_t>(at)], 0.0);
}

void LayerProbe::add(int row, bool backward, int64_t ns, double flops, double forward_bytes, double backward_bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  LayerTime& l = step_[static_cast<std::size_t>(row)];
  (backward ? l.backward_ns : l.forward_ns) += ns;
  (backward ? l.backward_flops : l.forward_flops) += flops;
  l.forward_bytes += forward_bytes;
  l.backward_bytes += backward_bytes;
}

LayerTimes LayerProbe::times(bool graph_kept) const {
  LayerTimes t = times_;
  if (t.probed_steps == 0 && t.why_not.empty()) {
    t.why_not = graph_kept ? "the steps replayed as one CUDA graph, whose layers the host does not run"
                           : "the fit ended before its first probed step (the " + std::to_string(kFirst + 1) +
                                 "th after the warm-up)";
  }
  return t;
}

void LayerProbe::record(const StepRecord& record, int64_t measured_index) {
  if (!record.probed) {
    if (measured_index >= 0) unprobed_.add(record.step_ns);
    if (!device_steps_.empty()) resolve(/*wait=*/false);
    return;
  }
  fold(record);
}

void LayerProbe::add_probed_step(const std::vector<LayerTime>& rows, int64_t forward_ns, int64_t backward_ns) {
  for (const LayerTime& s : rows) {
    auto at = std::find_if(times_.layers.begin(), times_.layers.end(), [&](const LayerTime& l) { return l.name == s.name; });
    if (at == times_.layers.end()) at = times_.layers.insert(times_.layers.end(), LayerTime{s.name});
    at->forward_ns += s.forward_ns;
    at->backward_ns += s.backward_ns;
    at->forward_flops += s.forward_flops;
    at->backward_flops += s.backward_flops;
    at->forward_bytes += s.forward_bytes;
    at->backward_bytes += s.backward_bytes;
  }
  times_.forward_phase_ns += forward_ns;
  times_.backward_phase_ns += backward_ns;
  ++times_.probed_steps;
}

void LayerProbe::fold(const StepRecord& record) {
  if (warming_) {  // its figures are those of code the probe had not run for `every` steps: not kept
    warm_ns_ = record.step_ns;
    ++times_.probe_warmups;
    return;
  }
  if (device_) {  // its times once the device has passed its events
    device_steps_.push_back({step_, std::move(device_spans_)});
    device_spans_.clear();
    resolve(/*wait=*/false);
  } else {
    add_probed_step(step_, phase_ns_[0], phase_ns_[1]);
  }
  const double reference = unprobed_.quantile(0.5);
  if (reference <= 0) return;
  // its warm-up, if the step before was one (not one left over from a probe another fit's probe took)
  const int64_t warm_ns = warm_index_ == probing_index_ - 1 ? warm_ns_ : 0;
  const double steps = warm_ns > 0 ? 2.0 : 1.0;
  cost_sum_ += std::max(0.0, static_cast<double>(warm_ns + record.step_ns) / reference - steps);
  ++costs_;
  times_.probe_cost = cost_sum_ / static_cast<double>(costs_);
  if (times_.auto_every) {
    times_.every = std::clamp<int64_t>(static_cast<int64_t>(std::ceil(times_.probe_cost / max_cost_)), kMinEvery, kMaxEvery);
    next_ = probing_index_ + times_.every;
  }
}

}  // namespace fitscope::detail
