// Trainer::fit: the loop, as a sequence of named steps (Trainer::Fit), and the fit's wall time around
// its steps (FitClock).

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "fitscope/callbacks/detail/slow_callback_warning.hpp"
#include "data_parallel_fit.hpp"
#include "below_phases.hpp"
#include "fitscope/callbacks/time_limit.hpp"
#include "fitscope/data/loading/loader.hpp"
#include "fitscope/data/streams/stream_dataset.hpp"
#include "fitscope/data/sources/subset_dataset.hpp"
#include "fitscope/train/freed_memory.hpp"
#include "fitscope/train/fused_optimizer.hpp"
#include "fitscope/train/trainer.hpp"
#include "step_graph.hpp"
#include "trainer_context.hpp"
#include "trainer_support.hpp"

namespace fitscope {

using detail::Attached;
using detail::callback_key;
using detail::require_positive;
using detail::to_device;

namespace {

/// Cost of one step's worth of clock operations (begin, ten boundaries, end), in ns.
double calibrate_clock() {
  constexpr int kRounds = 2000;
  StepClock probe;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kRounds; ++i) {
    probe.begin_step(0, i);
    for (Phase p : all_phases()) {
      if (p != Phase::other) probe.enter(p);
    }
    probe.end_step();
  }
  const auto elapsed = std::chrono::steady_clock::now() - start;
  return std::chrono::duration<double, std::nano>(elapsed).count() / kRounds;
}


/// The fit's wall time around its steps (FitTime): a clock read at each epoch's loop boundaries and
/// around validation, never per step (the step clock's records give the steps).
class FitClock {
 public:
  using Clock = FitTime::Clock;
  explicit FitClock(FitTime& time) : time_(time) {
    time_ = FitTime{};
    time_.start = Clock::now();
  }
  /// An epoch's batches begin: the time since the last epoch's batches ended is an epoch boundary.
  void loop_begins() {
    if (last_loop_end_) boundaries_s_ += seconds(*last_loop_end_, Clock::now());
  }
  /// A step ended (its record, on steady_clock).
  void step(const StepRecord& record) {
    if (!time_.first_step_end) {
      time_.first_step_end = Clock::time_point(std::chrono::nanoseconds(record.start_ns + record.step_ns));
    } else {
      time_.steps_s += static_cast<double>(record.step_ns) * 1e-9;
    }
  }
  void loop_ends() { last_loop_end_ = Clock::now(); }
  void validation_begins() { validation_start_ = Clock::now(); }
  void validation_ends() { time_.validation_s += seconds(validation_start_, Clock::now()); }
  /// The last epoch was handled.
  void finish() {
    time_.loop_end = Clock::now();
    loop_begins();  // the last epoch's end counts as a boundary too
    time_.epoch_end_s = std::max(0.0, boundaries_s_ - time_.validation_s);
  }

 private:
  static double seconds(Clock::time_point from, Clock::time_point to) {
    return std::chrono::duration<double>(to - from).count();
  }
  FitTime& time_;
  std::optional<Clock::time_point> last_loop_end_;
  Clock::time_point validation_start_;
  double boundaries_s_ = 0;
};

/// Why the fit's step cannot be captured as a CUDA graph (TrainerOptions::cuda_graph), "" when it can:
/// the first rule that holds.
std::string not_capturable(const TrainerOptions& o, int64_t world_size, bool capture_here) {
  using StandardStep = StepOutput (*)(const Batch&, StepContext&);
  const auto* step = o.train_step.target<StandardStep>();
  const std::pair<bool, const char*> rules[] = {
      {!capture_here, "CUDA graphs need a CUDA device and a libtorch with CUDA"},
      {!step || *step != &standard_train_step, "a custom train step (TrainerOptions::train_step) runs as written"},
      {world_size > 1, "a data-parallel step's gradient communication is not captured"},
      {o.accumulate > 1, "with gradient accumulation the weights change on some batches only"},
      {o.clipping.enabled(), "gradient clipping reads the gradients' norm on the host"},
      {o.precision != Precision::float32, "bfloat16 autocast is not captured"},
  };
  for (const auto& [holds, reason] : rules) {
    if (holds) return reason;
  }
  return {};
}

}  // namespace

/// One fit's running state: the loaders, the callbacks, the rank agreement, the pending step records.
/// fit() is its loop; each member function is one named step of it.
struct Trainer::Fit {
  Fit(Trainer& trainer, std::shared_ptr<const Dataset> data, const FitOptions& o);
  ~Fit() {  // the hooks see no fit after it
    c.callbacks = nullptr;
    c.loader = nullptr;
  }
  Fit(const Fit&) = delete;
  Fit& operator=(const Fit&) = delete;

  Trainer& t;
  Context& c;  // the trainer's context: what the hooks see of the fit
  const FitOptions& o;
  std::shared_ptr<const Dataset> train, validation;
  std::unique_ptr<Loader> loader, validation_loader;
  int64_t steps = 0;
  int64_t schedule_length = 0;  // TrainerOptions::lr_schedule's, in its units
  int64_t steps_run = 0;        // batches of this fit (FitOptions::max_steps)
  std::unique_ptr<detail::DataParallelFit> ranks;
  CallbackList callbacks;
  std::unique_ptr<SlowCallbackWarning> slow_callbacks;
  std::unique_ptr<detail::StepGraph> graph;  // the step, eager or replayed (TrainerOptions::cuda_graph)
  std::unique_ptr<detail::BelowPhases> below;  // the layers, the memory
  int64_t recorded = 0;                        // step records of this fit
  FitClock clock;
  bool batch_logs = false, has_callbacks = false, transfer = false;
  static constexpr std::size_t kFoldEvery = 16;
  std::vector<StepRecord> pending;

  /// Folds the pending records into the distributions (in groups: the histograms are touched in
  /// bursts, not once per step between the model's kernels).
  void fold() {
    for (const StepRecord& r : pending) t.measured_.stats.add(r);
    pending.clear();
    if (has_callbacks) slow_callbacks->check(callbacks, t.measured_.stats);
  }
  /// Before an epoch's batches: the metrics (a resumed epoch's as they were), the loader's order, the
  /// epoch's learning rate, on_epoch_begin. `resumed`: the epoch continues a restored state.
  void begin_epoch(int64_t epoch, const std::optional<Context::Position>& resumed);
  /// A position of another number of ranks, or in a pass they split anew: this rank's share of what
  /// the pass has left (p.rest) and the batch it starts at, so the pass ends with the epoch's last
  /// batch: examples by index, or a stream's records (StreamDataset::rest_of_pass).
  void reshard(Context::Position& p);
  bool train_step(int64_t epoch, int64_t b, StepContext& context);
  void record_step(const StepRecord& record, int64_t epoch, int64_t b);
  /// None when an interruption cut the validation short: the epoch did not end.
  std::optional<Logs> end_epoch(int64_t epoch);
  /// Flushes the sinks and keeps what the fit measured (also when it fails).
  void finish();
};

Trainer::Fit::Fit(Trainer& trainer, std::shared_ptr<const Dataset> data, const FitOptions& options)
    : t(trainer), c(*trainer.context_), o(options), train(data), validation(options.validation_data),
      clock(trainer.measured_.time) {
  std::string unread_records;  // a warning for the fit's own list, which starts below
  if (!validation && o.validation_split > 0) {
    if (dynamic_cast<const StreamDataset*>(data.get())) {  // as Keras refuses validation_split for a tf.data.Dataset
      throw std::invalid_argument("FitOptions::validation_split " + std::to_string(o.validation_split) + ": " + data->source() +
                                  " is a stream, which has no last examples to hold out (expected FitOptions::validation_data, "
                                  "or validation_split 0)");
    }
    std::tie(train, validation) = split_dataset(data, o.validation_split);
  }
  if (const auto* stream = dynamic_cast<const StreamDataset*>(train.get()); stream && t.ranks().world_size() > 1) {
    // each rank reads its own shards: all run the steps of the fewest records any rank holds, so that no
    // rank waits in a collective for one that has finished its epoch
    const at::Tensor records = t.ranks().all_gather(at::full({1}, stream->records(), at::kLong));
    const int64_t fewest = records.min().item<int64_t>();
    if (fewest < stream->size()) train = stream->limited_to(fewest);
    const int64_t total = records.sum().item<int64_t>(), unread = total - fewest * records.size(0);
    if (unread > 0) {  // said, not silent: every rank says the same; the chief's summary keeps it
      std::string held;
      for (int64_t r = 0; r < records.size(0); ++r) held += (r ? ", " : "") + std::to_string(records[r].item<int64_t>());
      unread_records = data->source() + ": " + std::to_string(unread) + " of the job's " + std::to_string(total) +
                       " records are not read in any epoch: each rank reads as many as the fewest any rank holds (" +
                       std::to_string(fewest) + "; the ranks hold " + held + "); shards of even sizes leave none out";
    }
  }
  loader = std::make_unique<Loader>(train, t.sharded_loader_options(o, /*training=*/true, *train));
  if (validation) {
    validation_loader = std::make_unique<Loader>(validation, t.sharded_loader_options(o, /*training=*/false, *validation));
  }
  if (loader->num_batches() == 0) {
    throw std::invalid_argument("a training set of " + std::to_string(train->size()) + " examples gives no batch of " +
                                std::to_string(o.loader.batch_size) + " with drop_last");
  }
  steps = o.steps_per_epoch.value_or(loader->num_batches());
  if (const LrSchedule& s = t.options_.lr_schedule) {
    const int64_t fit_steps = std::min(o.epochs * steps, o.max_steps.value_or(o.epochs * steps));
    schedule_length = s.length.value_or(s.unit == LrSchedule::Unit::step ? fit_steps : o.epochs);
  }
  c.fit_params = {o.epochs, o.initial_epoch, steps, o.loader.batch_size, train->size(), validation ? validation->size() : 0};

  const int64_t epochs_left = std::max<int64_t>(o.epochs - o.initial_epoch, 0);
  const int64_t planned_steps = std::min(epochs_left * steps, o.max_steps.value_or(epochs_left * steps));
  t.threads_.plan(planned_steps);
  const int64_t warmup = t.warmup_steps();
  t.threads_.apply();
  t.cpu_.start();
  FitMeasurements& m = t.measured_;
  m.stats = PhaseStats(warmup);
  m.world_size = t.ranks().world_size();
  m.local_world_size = t.ranks().local_world_size();
  m.ranks = RankTimings(m.world_size, warmup);
  m.communication = StreamingQuantiles();
  m.gradient_buckets.clear();
  m.warnings.clear();
  if (!unread_records.empty()) c.warn(unread_records);
  m.callbacks.clear();
  ranks = std::make_unique<detail::DataParallelFit>(t.options_.context, t.options_.buckets, warmup, m.ranks, m.communication);
  std::vector<std::shared_ptr<Callback>> all = o.callbacks;
  if (o.max_time_s) all.push_back(std::make_shared<TimeLimit>(*o.max_time_s));
  callbacks = CallbackList(ranks->callbacks_of_this_rank(all));
  batch_logs = callbacks.reads_batch_logs();
  has_callbacks = !callbacks.empty();
  transfer = !t.options_.device.is_cpu();
  t.clock_.set_rank(t.ranks().rank());
  t.clock_.set_enabled(t.options_.timing);
  t.device_timer_.reset();
  if (t.options_.timing && t.options_.device.is_cuda()) {
    if (auto events = make_cuda_event_source(detail::cuda_index(t.options_.device))) {
      // events on one measured step in 8: each is a driver call on the training thread, and on a
      // launch-bound step their cost is a share of the step (bench/gpu_figures' timers on / off)
      t.device_timer_ = std::make_shared<DeviceTimer>(std::move(events), warmup, /*sample_every=*/8);
    }
  }
  m.device_timer = t.device_timer_;
  t.clock_.set_listener(t.device_timer_.get());
  below = std::make_unique<detail::BelowPhases>(t.options_, *t.model_, t.clock_, planned_steps - warmup, m);
  {
    const TrainerOptions& to = t.options_;
    std::unique_ptr<StepCapture> capture;
    if (to.cuda_graph != CudaGraphMode::off) capture = to.step_capture ? to.step_capture() : make_cuda_step_capture(to.device);
    const std::string reason = not_capturable(to, m.world_size, capture != nullptr);
    c.steps_replayed = reason.empty();  // a replayed step updates the weights without update_weights()
    if (to.cuda_graph == CudaGraphMode::on && !reason.empty()) c.warn("TrainerOptions::cuda_graph is on, but every step runs eagerly: " + reason);
    graph = std::make_unique<detail::StepGraph>(to.cuda_graph, std::move(capture), reason, to.optimizer, to.train_step, warmup,
                                                [timer = t.device_timer_]() -> std::optional<double> {
                                                  if (!timer) return std::nullopt;
                                                  timer->resolve_passed();  // the trial has just synchronised
                                                  return timer->busy_ms();
                                                });
  }
  slow_callbacks = std::make_unique<SlowCallbackWarning>([this](const std::string& text) { c.warn(text); },
                                                         t.options_.slow_callback_threshold);
  if (m.clock_overhead_ns_per_step == 0) m.clock_overhead_ns_per_step = calibrate_clock();  // once per trainer
  pending.reserve(kFoldEvery);
  c.stop = c.interrupted = false;
  c.saves.clear();
  c.last_grad_norm.reset();
  c.callbacks = &callbacks;
  c.loader = loader.get();
}

void Trainer::Fit::begin_epoch(int64_t epoch, const std::optional<Context::Position>& resumed) {
  t.train_metrics_->reset();
  if (resumed && !c.resumed_metrics.empty()) t.train_metrics_->load_state(c.resumed_metrics);
  c.resumed_metrics.clear();
  // an epoch is a pass over the training set, or with steps_per_epoch a stretch of a continuing
  // stream of shuffled passes, which the first epoch starts
  if (resumed && (resumed->rest || resumed->stream_rest)) {
    const int64_t pass = o.steps_per_epoch ? resumed->pass : epoch, first = o.steps_per_epoch ? resumed->cursor : resumed->batch;
    if (resumed->rest) {
      loader->continue_epoch(pass, first, *resumed->rest);
    } else {
      loader->continue_stream_epoch(pass, first, *resumed->stream_rest);
    }
  } else if (resumed) {
    const int64_t first_batch = o.steps_per_epoch ? resumed->cursor : resumed->batch;
    // a stream's position stands after batch first_batch - 1 of the loader's pass (none at a pass's start)
    loader->set_epoch(o.steps_per_epoch ? resumed->pass : epoch, first_batch,
                      first_batch > 0 && resumed->cursor == first_batch ? resumed->stream_position : std::string());
  } else if (!o.steps_per_epoch || loader->next_batch() == 0) {
    loader->set_epoch(epoch);
  }
  if (const LrSchedule& s = t.options_.lr_schedule; s && s.unit == LrSchedule::Unit::epoch) {
    c.set_learning_rate(s.rate(epoch, schedule_length));
  }
  Logs logs;
  callbacks.on_epoch_begin(epoch, logs);
  clock.loop_begins();
}

void Trainer::Fit::reshard(Context::Position& p) {
  const int64_t world = t.ranks().world_size(), batch = o.loader.batch_size;
  const int64_t cursor = o.steps_per_epoch ? p.cursor : p.batch;
  const int64_t pass_ranks = p.pass_ranks > 0 ? p.pass_ranks : p.world_size;
  const auto* stream = dynamic_cast<const StreamDataset*>(train.get());
  const bool moved = p.world_size > 0 && p.world_size != world;
  // a backup taken in a pass split anew: its batches are not the standard split's, its examples tell
  const bool split_anew = p.world_size > 0 && p.pass_examples >= 0 && p.pass_examples != cursor * batch * p.world_size;
  // a stream's pass is ordered by the ranks that began it, whatever number resumed it since
  if (!moved && !split_anew && !(stream && pass_ranks != world)) return;
  const int64_t pass = o.steps_per_epoch ? p.pass : p.epoch;
  const int64_t done = p.pass_examples >= 0 ? p.pass_examples : cursor * batch * p.world_size;
  int64_t share = 0;
  if (stream) {
    p.stream_rest = stream->rest_of_pass(pass, pass_ranks, done);
    share = static_cast<int64_t>(p.stream_rest->size());
  } else {
    DistributedSampler sampler(train->size(), t.training_shard(o));
    sampler.set_epoch(pass);
    p.rest = sampler.indices_after(done);
    share = static_cast<int64_t>(p.rest->size());
  }
  const int64_t batches = loader->num_batches();
  const int64_t left = std::min(batches, o.loader.drop_last ? share / batch : (share + batch - 1) / batch);
  const int64_t kept = std::min(share, left * batch);
  if (stream && share > batches * batch) {  // a stream's epochs differ in length on another number of ranks
    c.warn(train->source() + ": the rest of pass " + std::to_string(pass) + " gives this rank " + std::to_string(share) +
           " records, more than the " + std::to_string(batches * batch) + " of its epoch: the last " +
           std::to_string(share - kept) + " of them are not trained on in that pass");
  }
  if (p.rest) p.rest->resize(static_cast<std::size_t>(kept));
  if (p.stream_rest) p.stream_rest->resize(static_cast<std::size_t>(kept));
  const int64_t first = batches - left;  // the pass ends with its last batch, as every pass does
  p.cursor = first;
  if (!o.steps_per_epoch) p.batch = first;  // the epoch is the pass
  p.stream_position.clear();
  c.resharded = Context::Resharded{pass, first, done, stream ? pass_ranks : world};
  if (!c.resumed_metrics.empty()) {  // one process's states, which every rank would add to the job's sums
    c.warn("the backup's training metrics are one process's and this run has " + std::to_string(world) +
           " ranks: the resumed epoch's metrics cover the batches after it");
    c.resumed_metrics.clear();
  }
}

/// One training step: batch hooks, the batch, the user's step, metrics, requested checkpoints, the
/// ranks' agreement on stopping. Returns whether to stop.
bool Trainer::Fit::train_step(int64_t epoch, int64_t b, StepContext& context) {
  StepClock& clock_ = t.clock_;
  // phases that cannot take time here (no callbacks, no transfer on the CPU) are not entered: every
  // clock read counts against the step
  clock_.begin_step(epoch, b, has_callbacks ? Phase::callbacks : Phase::data_wait);
  // the batch's rate before its hooks, as Keras's optimizer evaluates its schedule at `iterations`
  if (const LrSchedule& s = t.options_.lr_schedule; s && s.unit == LrSchedule::Unit::step) {
    c.set_learning_rate(s.rate(c.global_step_count, schedule_length));
  }
  Logs logs;
  if (has_callbacks) {
    callbacks.on_train_batch_begin(b, logs);
    clock_.enter(Phase::data_wait);
  }
  if (loader->next_batch() == loader->num_batches()) {  // steps_per_epoch beyond a pass: the next shuffled pass
    loader->set_epoch(loader->epoch() + 1);
  }
  Batch batch = loader->next();
  if (transfer) {
    clock_.enter(Phase::h2d);
    batch.inputs = to_device(batch.inputs, t.options_.device);
    batch.targets = to_device(batch.targets, t.options_.device);
  }
  clock_.set_samples(batch.size());
  clock_.leave();

  if (const int64_t n = t.options_.accumulate; n > 1) {  // groups of n batches from the epoch's start
    const int64_t group = b / n * n, size = std::min(n, steps - group);
    context.update = b + 1 == group + size;
    context.loss_scale = 1.0 / static_cast<double>(size);
  }
  context.grad_norm.reset();
  // an eager step only: a replayed graph is one phase whose operations the host does not run
  if (graph->eager() && !t.threads_.searching() && below->begin_step(recorded - t.measured_.stats.warmup_steps())) {
    clock_.mark_probed();
  }
  const StepOutput out = graph->step(batch, context, !t.threads_.searching());
  below->end_work();
  if (context.grad_norm) c.last_grad_norm = context.grad_norm;
  ++c.global_step_count;  // as Keras's iterations: the batch hooks see this step counted

  clock_.enter(Phase::metrics);
  t.train_metrics_->update(out.outputs, batch.targets, out.loss);
  if (has_callbacks) {
    if (batch_logs) {
      logs = t.train_metrics_->logs();
      if (context.grad_norm) logs.set("grad_norm", *context.grad_norm);
    }
    clock_.enter(Phase::callbacks);
    const detail::Shown shown(c.shown_loss, &out.loss);  // the step's loss is the hooks' to read
    callbacks.on_train_batch_end(b, logs);
  }
  if (!c.saves.empty()) {  // requested by a callback
    clock_.enter(Phase::checkpoint);
    c.checkpoint_if_requested(epoch, b + 1);
  }
  c.stop = ranks->end_step(clock_, c.stop);
  record_step(clock_.end_step(), epoch, b);
  return c.stop;
}

/// Feeds a finished step to the thread search, the rank timings, the distributions and the sinks.
void Trainer::Fit::record_step(const StepRecord& record, int64_t epoch, int64_t b) {
  if (!t.options_.timing) return;
  clock.step(record);
  const auto extend_warmup = [&](int64_t more) {
    t.measured_.stats.extend_warmup(more);
    ranks->extend_warmup(more);
    if (t.device_timer_) t.device_timer_->extend_warmup(more);
  };
  if (t.threads_.searching()) {
    const int64_t steps_left = (o.epochs - epoch - 1) * steps + (steps - b - 1);
    // the search grew to cover its time, or its last pools still spin: warm-up too
    extend_warmup(t.threads_.after_step(static_cast<double>(record.step_ns) * 1e-6, steps_left,
                                        [&](std::vector<double>& v) { ranks->sum(v); }));
  } else if (!record.probed) {  // the setting chosen, watched: what the threads run, not the wait for data
    t.threads_.watch(static_cast<double>(record.step_ns - record.phase(Phase::data_wait)) * 1e-6, recorded);
  }
  if (graph->trial_step()) extend_warmup(1);  // the CUDA-graph trial's steps are warm-up too
  const int64_t measured_index = recorded++ - t.measured_.stats.warmup_steps();
  below->record(record, measured_index, t.measured_.memory);
  ranks->keep(record);
  pending.push_back(record);
  if (pending.size() == kFoldEvery) fold();
  for (auto& sink : o.step_sinks) sink->on_step(record);
}

/// After an epoch's batches: the ranks' records and metrics gathered, validation, on_epoch_end and
/// its checkpoints. Returns the epoch's logs.
std::optional<Logs> Trainer::Fit::end_epoch(int64_t epoch) {
  fold();  // epoch-level hooks (TensorBoard's timing scalars) see every step of the epoch
  const bool validates = validation && (epoch + 1) % o.validation_freq == 0;
  // this rank's own training metrics, before the ranks sum them: what a backup taken in a validation
  // that a signal cuts short must hold, as one taken after a training step does
  std::vector<at::Tensor> own_metrics;
  if (validates && t.ranks().world_size() > 1) {
    for (const at::Tensor& s : t.train_metrics_->state()) own_metrics.push_back(s.clone());
  }
  c.stop = ranks->end_epoch(c.stop, *t.train_metrics_, o.step_sinks);
  Logs logs = t.train_metrics_->logs();
  const auto warn = [this](const std::string& text) { c.warn(text); };
  t.train_metrics_->warn_undefined(warn, "");
  if (validates) {
    clock.validation_begins();
    const int64_t validation_start = StepClock::now_ns();
    validation_loader->set_epoch(0);
    const std::optional<Logs> validated = t.run_evaluation(*validation_loader, callbacks, /*reduce=*/true, /*interruptible=*/true);
    const int64_t validation_ns = StepClock::now_ns() - validation_start;
    for (auto& sink : o.step_sinks) sink->on_validation(epoch, validation_start, validation_ns);
    t.model_->train(true);
    clock.validation_ends();
    if (!validated) {  // a backup asked for now resumes after the epoch's last batch: at its validation
      if (!own_metrics.empty()) t.train_metrics_->load_state(own_metrics);
      c.checkpoint_if_requested(epoch, steps);
      return std::nullopt;
    }
    logs.merge(validated->with_prefix("val_"));
    t.test_metrics_->warn_undefined(warn, "val_");
  }
  if (t.options_.lr_schedule) logs.set("learning_rate", c.learning_rate());  // as Keras 3's schedulers
  callbacks.on_epoch_end(epoch, logs);
  c.checkpoint_if_requested(epoch + 1, 0);
  return logs;
}

void Trainer::Fit::finish() {
  t.clock_.set_listener(nullptr);
  fold();
  if (has_callbacks) slow_callbacks->check(callbacks, t.measured_.stats, /*last=*/true);
  FitMeasurements& m = t.measured_;
  for (CallbackTiming& timing : callbacks.timings()) m.callbacks.push_back(std::move(timing));
  const std::vector<CallbackSpan> spans = callbacks.take_spans();
  std::vector<ThreadSpan> builds;
  for (const BatchBuild& b : loader->take_builds()) {
    builds.push_back({"loader worker " + std::to_string(b.worker), "batch " + std::to_string(b.batch), b.start_ns, b.dur_ns});
  }
  for (ThreadSpan& span : below->take_spans()) builds.push_back(std::move(span));  // the probed steps' layers
  m.loader = loader->stats();
  for (auto& sink : o.step_sinks) {
    sink->on_thread_spans(builds);
    sink->on_loader_changes(m.loader.changes);
    sink->on_callback_spans(spans);
    sink->finish();
  }
  m.threads = t.threads_.choice();
  m.cuda_graph = graph->outcome();
  if (t.options_.cuda_graph == CudaGraphMode::on && m.cuda_graph.tried && !m.cuda_graph.kept) {
    c.warn("TrainerOptions::cuda_graph is on, but the steps ran eagerly: " + m.cuda_graph.reason);
  }
  m.cpu = t.cpu_.stop();  // before the loader's threads exit
  below->finish(m);
}

History Trainer::fit(std::shared_ptr<const Dataset> data, const FitOptions& o) {
  if (!data) throw std::invalid_argument("fit needs a training set, got null");
  detail::require_labels(*data, "fit");
  if (o.validation_data) detail::require_labels(*o.validation_data, "fit's validation");
  require_positive(o.epochs, "epochs");
  require_positive(o.loader.batch_size, "batch size");
  if (o.initial_epoch < 0) {
    throw std::invalid_argument("initial epoch must be >= 0, got " + std::to_string(o.initial_epoch));
  }
  if (o.steps_per_epoch) require_positive(*o.steps_per_epoch, "steps per epoch");
  require_positive(o.validation_freq, "validation frequency");
  if (o.max_steps) require_positive(*o.max_steps, "max steps");
  if (o.validation_split < 0 || o.validation_split >= 1) {
    throw std::invalid_argument("validation split must be in [0, 1), got " + std::to_string(o.validation_split));
  }
  for (const auto& transform : o.loader.transforms) {  // augmentation: a normalisation there is a silent wrong answer
    if (dynamic_cast<const Normalize*>(transform.get())) {
      throw std::invalid_argument("LoaderOptions transforms hold Normalize, but they are augmentation, applied to "
                                  "training batches only: validation, evaluate and predict would see unnormalised "
                                  "inputs (expected Normalize in TrainerOptions preprocessing)");
    }
  }
  if (o.metrics) {  // built first: an unknown name leaves the trainer as it was
    auto train_metrics = std::make_unique<MetricSet>(*o.metrics);
    test_metrics_ = std::make_unique<MetricSet>(*o.metrics);
    train_metrics_ = std::move(train_metrics);
    options_.metrics = *o.metrics;
  }

  if (options_.keep_freed_memory) keep_freed_memory();  // before the fit's first allocation
  Fit fit(*this, std::move(data), o);
  Attached attached(fit.callbacks, context_.get());
  StepContext context{*model_, *optimizer_, options_.loss, clock_};
  context.clipping = options_.clipping;
  context.loss_options = options_.loss_options;
  context.precision = options_.precision;
  context.before_update = [this] { context_->finish_reading(true); };
  clear_gradients(*optimizer_);  // an earlier fit stopped inside an accumulation group leaves its gradients
  History history;
  try {
    model_->train(true);
    Logs logs;
    fit.callbacks.on_train_begin(logs);
    context_->resharded.reset();
    std::optional<Context::Position> resumed = context_->resume(fit.callbacks);
    if (resumed) fit.reshard(*resumed);
    fit.ranks->start(*model_);  // from the chief's weights (after a restore, if any)
    context.reducer = fit.ranks->reducer();
    const int64_t first_epoch = resumed ? resumed->epoch : o.initial_epoch;
    // as Keras, the stop is looked at after each batch and each epoch: one asked for in
    // on_train_begin still runs the first batch
    for (int64_t epoch = first_epoch; epoch < o.epochs; ++epoch) {
      const bool continuing = resumed && epoch == first_epoch;
      fit.begin_epoch(epoch, continuing ? resumed : std::nullopt);
      for (int64_t b = continuing ? resumed->batch : 0; b < fit.steps; ++b) {
        if (fit.train_step(epoch, b, context)) break;
        if (o.max_steps && ++fit.steps_run >= *o.max_steps) {  // the same batch on every rank
          context_->stop = true;
          break;
        }
      }
      fit.clock.loop_ends();
      const std::optional<Logs> ended = fit.end_epoch(epoch);
      if (!ended) break;
      history.append(epoch, *ended);
      if (context_->stop) break;
    }
    fit.clock.finish();
    context_->finish_reading(false);  // a backup reading the weights: done before anything may change them
    measured_.gradient_buckets = fit.ranks->reducer() ? fit.ranks->reducer()->bucket_bytes() : std::vector<int64_t>{};
    logs = history.epochs().empty() ? Logs() : history.last();
    fit.callbacks.on_train_end(logs);
  } catch (...) {
    context_->reading = nullptr;  // the callbacks' detaching waits for their writes
    try {  // this rank's own error (not a peer's): its peers name it with it
      throw;
    } catch (const distributed::PeerFailure&) {
    } catch (const std::exception& e) {
      ranks().tell_own_failure(e.what());
    } catch (...) {
    }
    try {
      fit.finish();
    } catch (...) {
      // the first error is the one to report
    }
    throw;
  }
  if (device_timer_) device_timer_->finish();  // the steps the device had not passed yet: one wait
  fit.finish();
  return history;
}

}  // namespace fitscope
