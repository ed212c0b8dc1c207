#include "fitscope/train/trainer.hpp"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/cuda.h>
#include <torch/optim/adam.h>
#include <torch/optim/sgd.h>
#include <torch/utils.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "fitscope/callbacks/slow_callback_warning.hpp"
#include "fitscope/checkpoint/checkpoint_writer.hpp"
#include "fitscope/data/loader.hpp"
#include "fitscope/data/subset_dataset.hpp"
#include "fitscope/dist/metric_reduction.hpp"
#include "fitscope/metrics/metric_set.hpp"
#include "data_parallel_fit.hpp"
#include "optimizer_state.hpp"

namespace fitscope {

namespace {

void require_positive(int64_t value, const char* field) {
  if (value < 1) {
    throw std::invalid_argument(std::string(field) + " must be >= 1, got " + std::to_string(value));
  }
}

/// Attaches callbacks to the trainer for a scope, and always detaches them.
class Attached {
 public:
  Attached(CallbackList& list, Trainer* trainer) : list_(list) { list_.set_trainer(trainer); }
  ~Attached() { list_.set_trainer(nullptr); }
  Attached(const Attached&) = delete;
  Attached& operator=(const Attached&) = delete;

 private:
  CallbackList& list_;
};

/// A callback's name in a checkpoint: its name and its place in the list (two of a kind stay apart).
std::string callback_key(const Callback& callback, std::size_t index) {
  return std::to_string(index) + ":" + callback.name();
}

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

at::Tensor to_device(const at::Tensor& t, const c10::Device& device) {
  return t.device() == device ? t : t.to(device, /*non_blocking=*/true);
}

}  // namespace

Trainer::Trainer(std::shared_ptr<Model> model, TrainerOptions options)
    : model_(std::move(model)),
      options_(std::move(options)),
      stats_(options_.warmup_steps),
      threads_(options_.threads, core_share(options_.context ? options_.context->local_world_size() : 1),
               options_.context ? options_.context->world_size() : 1) {
  if (!model_) throw std::invalid_argument("the trainer needs a model, got null");
  if (!options_.context) options_.context = dist::single_process_context();
  if (!(options_.learning_rate > 0)) {
    throw std::invalid_argument("learning rate must be > 0, got " + std::to_string(options_.learning_rate));
  }
  if (options_.device.is_cuda() && !torch::cuda::is_available()) {
    throw std::invalid_argument("device " + options_.device.str() +
                                " requested but this libtorch has no usable CUDA device");
  }
  train_metrics_ = std::make_unique<MetricSet>(options_.metrics);
  test_metrics_ = std::make_unique<MetricSet>(options_.metrics);
  model_->to(options_.device);
  if (options_.optimizer == OptimizerKind::adam) {
    optimizer_ = std::make_unique<torch::optim::Adam>(model_->parameters(),
                                                      torch::optim::AdamOptions(options_.learning_rate));
  } else {
    optimizer_ = std::make_unique<torch::optim::SGD>(model_->parameters(),
                                                     torch::optim::SGDOptions(options_.learning_rate));
  }
  if (!options_.train_step) options_.train_step = standard_train_step;
}

int64_t Trainer::warmup_steps() const {
  return options_.warmup_steps + (options_.timing ? threads_.search_steps_left() : 0);
}

Trainer::~Trainer() = default;

void Trainer::warn(const std::string& text) {
  warnings_.push_back(text);
  if (options_.warn) {
    options_.warn(text);
  } else {
    std::cerr << "fitscope: warning: " << text << "\n";
  }
}

double Trainer::learning_rate() const { return optimizer_->param_groups().front().options().get_lr(); }

void Trainer::set_learning_rate(double lr) {
  if (!(lr > 0)) throw std::invalid_argument("learning rate must be > 0, got " + std::to_string(lr));
  for (auto& group : optimizer_->param_groups()) group.options().set_lr(lr);
}

History Trainer::fit(const TensorDataset& data, const FitOptions& o) {
  return fit(std::make_shared<const TensorDataset>(data), o);
}

LoaderOptions Trainer::loader_options(const FitOptions& o, bool training) const {
  LoaderOptions l;
  l.batch_size = o.batch_size;
  l.shuffle = training && o.shuffle;
  l.seed = o.seed;
  l.drop_last = training && o.drop_last;
  l.delay_ms = training ? o.load_delay_ms : 0;
  l.workers = o.workers;
  l.prefetch = o.prefetch;
  if (training) l.transforms = o.transforms;
  l.cache = o.cache;
  l.pin_memory = options_.device.is_cuda();
  return l;
}

LoaderOptions Trainer::sharded_loader_options(const FitOptions& o, bool training, int64_t size) const {
  LoaderOptions l = loader_options(o, training);
  const dist::Context& ranks = context();
  if (ranks.world_size() == 1) return l;
  DistributedSamplerOptions shard;
  shard.rank = ranks.rank();
  shard.world_size = ranks.world_size();
  shard.shuffle = l.shuffle;
  shard.seed = o.seed;
  shard.drop_last = l.drop_last;
  shard.even = training;  // equal step counts for training; each example once for validation
  l.sampler = std::make_shared<DistributedSampler>(size, shard);
  return l;
}

History Trainer::fit(std::shared_ptr<const Dataset> data, const FitOptions& o) {
  if (!data) throw std::invalid_argument("fit needs a training set, got null");
  require_positive(o.epochs, "epochs");
  require_positive(o.batch_size, "batch size");
  if (o.initial_epoch < 0) {
    throw std::invalid_argument("initial epoch must be >= 0, got " + std::to_string(o.initial_epoch));
  }
  if (o.steps_per_epoch) require_positive(*o.steps_per_epoch, "steps per epoch");
  if (o.validation_split < 0 || o.validation_split >= 1) {
    throw std::invalid_argument("validation split must be in [0, 1), got " + std::to_string(o.validation_split));
  }

  if (o.metrics) {  // built first: an unknown name leaves the trainer as it was
    auto train_metrics = std::make_unique<MetricSet>(*o.metrics);
    test_metrics_ = std::make_unique<MetricSet>(*o.metrics);
    train_metrics_ = std::move(train_metrics);
    options_.metrics = *o.metrics;
  }
  std::shared_ptr<const Dataset> train = data;
  std::shared_ptr<const Dataset> validation = o.validation_data;
  if (!validation && o.validation_split > 0) {
    std::tie(train, validation) = split_dataset(data, o.validation_split);
  }
  Loader loader(train, sharded_loader_options(o, /*training=*/true, train->size()));
  std::unique_ptr<Loader> validation_loader;
  if (validation) {
    validation_loader = std::make_unique<Loader>(validation, sharded_loader_options(o, /*training=*/false, validation->size()));
  }
  if (loader.num_batches() == 0) {
    throw std::invalid_argument("a training set of " + std::to_string(train->size()) +
                                " examples gives no batch of " + std::to_string(o.batch_size) +
                                " with drop_last");
  }
  const int64_t steps = o.steps_per_epoch.value_or(loader.num_batches());
  params_ = {o.epochs, o.initial_epoch, steps, o.batch_size, train->size(),
             validation ? validation->size() : 0};

  const int64_t warmup = warmup_steps();
  threads_.apply();
  cpu_.start();
  detail::DataParallelFit ranks(options_.context, options_.buckets, warmup, rank_timings_, communication_);
  CallbackList callbacks(ranks.callbacks_of_this_rank(o.callbacks));
  Attached attached(callbacks, this);
  clock_.set_rank(context().rank());
  const bool batch_logs = callbacks.reads_batch_logs();
  const bool has_callbacks = !callbacks.empty();
  const bool transfer = !options_.device.is_cpu();
  const int64_t num_batches = loader.num_batches();
  stats_ = PhaseStats(warmup);
  clock_.set_enabled(options_.timing);
  device_timer_.reset();
  if (options_.timing && options_.device.is_cuda()) {
    if (auto events = make_cuda_event_source(options_.device.has_index() ? options_.device.index() : 0)) {
      device_timer_ = std::make_unique<DeviceTimer>(std::move(events), warmup);
    }
  }
  clock_.set_listener(device_timer_.get());
  warnings_.clear();
  const auto warn = [this](const std::string& text) { this->warn(text); };
  SlowCallbackWarning slow_callbacks(warn, options_.slow_callback_threshold);
  if (clock_overhead_ns_ == 0) clock_overhead_ns_ = calibrate_clock();  // once per trainer
  stop_requested_ = false;
  History history;

  StepContext context{*model_, *optimizer_, options_.loss, clock_};
  int64_t& pass = pass_;  // continuing stream of shuffled passes (with steps_per_epoch)
  int64_t& cursor = cursor_;
  pass = o.steps_per_epoch ? o.initial_epoch : 0;
  cursor = 0;
  callbacks_ = &callbacks;
  checkpoint_writer_ = nullptr;
  const Logs no_logs;
  Logs last_logs;

  constexpr std::size_t kFoldEvery = 16;
  std::vector<StepRecord> pending;
  pending.reserve(kFoldEvery);
  auto fold = [&] {
    for (const StepRecord& r : pending) stats_.add(r);
    pending.clear();
    if (has_callbacks) slow_callbacks.check(callbacks, stats_);
  };
  auto finish_sinks = [&] {
    fold();
    callback_timings_.clear();
    for (const CallbackTiming* t : callbacks.timings()) callback_timings_.push_back(*t);
    const std::vector<CallbackSpan> spans = callbacks.take_spans();
    for (auto& sink : o.step_sinks) {
      sink->on_callback_spans(spans);
      sink->finish();
    }
    loader_stats_ = loader.stats();
    cpu_utilization_ = cpu_.stop();  // before the loader's threads exit
  };
  try {
    model_->train(true);
    callbacks.on_train_begin(no_logs);
    int64_t first_epoch = o.initial_epoch, first_batch = 0;
    const bool resuming = resume_.has_value();
    if (resuming) {  // restore() was called: continue where the checkpoint was taken
      first_epoch = resume_->epoch;
      first_batch = resume_->batch;
      pass = resume_->pass;
      cursor = resume_->cursor;
      for (std::size_t i = 0; i < callbacks.callbacks().size(); ++i) {
        const auto it = resume_->callbacks.find(callback_key(*callbacks.callbacks()[i], i));
        if (it != resume_->callbacks.end()) callbacks.callbacks()[i]->load_state(it->second);
      }
      resume_.reset();
    }
    ranks.start(*model_);  // from the chief's weights (after a restore, if any)
    context.reducer = ranks.reducer();
    for (int64_t epoch = first_epoch; epoch < o.epochs && !stop_requested_; ++epoch) {
      const bool continuing = resuming && epoch == first_epoch;
      train_metrics_->reset();
      if (!o.steps_per_epoch && !continuing) {
        pass = epoch;
        cursor = 0;
      }
      if (cursor == 0 || continuing) loader.set_epoch(pass, cursor);
      callbacks.on_epoch_begin(epoch, no_logs);
      for (int64_t b = continuing ? first_batch : 0; b < steps; ++b) {
        // phases that cannot take time here (no callbacks, no transfer on the CPU) are not entered:
        // every clock read counts against the step
        clock_.begin_step(epoch, b, has_callbacks ? Phase::callbacks : Phase::data_wait);
        if (has_callbacks) {
          callbacks.on_train_batch_begin(b, no_logs);
          clock_.enter(Phase::data_wait);
        }
        if (cursor == num_batches) {
          loader.set_epoch(++pass);
          cursor = 0;
        }
        Batch batch = loader.next();
        ++cursor;
        if (transfer) {
          clock_.enter(Phase::h2d);
          batch.inputs = to_device(batch.inputs, options_.device);
          batch.targets = to_device(batch.targets, options_.device);
        }
        clock_.set_samples(batch.size());
        clock_.leave();

        const StepOutput out = options_.train_step(batch, context);
        ++global_step_;  // as Keras's iterations: the batch hooks see this step counted

        clock_.enter(Phase::metrics);
        train_metrics_->update(out.outputs, batch.targets, out.loss);
        const Logs logs = batch_logs ? train_metrics_->logs() : no_logs;
        if (has_callbacks) {
          clock_.enter(Phase::callbacks);
          callbacks.on_train_batch_end(b, logs);
        }
        if (checkpoint_writer_) {  // requested by a callback: copy now, write in the background
          clock_.enter(Phase::checkpoint);
          checkpoint_if_requested(epoch, b + 1);
        }
        stop_requested_ = ranks.end_step(clock_, stop_requested_);
        const StepRecord& record = clock_.end_step();
        if (options_.timing) {
          if (threads_.searching()) {
            const int64_t steps_left = (o.epochs - epoch - 1) * steps + (steps - b - 1);
            const int64_t cooldown = threads_.after_step(static_cast<double>(record.step_ns) * 1e-6, steps_left,
                                                         [&](std::vector<double>& v) { ranks.sum(v); });
            stats_.extend_warmup(cooldown);  // the search's last pools still spin: warm-up too
            ranks.extend_warmup(cooldown);
            if (device_timer_) device_timer_->extend_warmup(cooldown);
          }
          ranks.keep(record);
          // records are folded into the distributions in groups: the histograms are touched in
          // bursts, not once per step between the model's kernels
          pending.push_back(record);
          if (pending.size() == kFoldEvery) fold();
          for (auto& sink : o.step_sinks) sink->on_step(record);
        }
        if (stop_requested_) break;
      }
      fold();  // epoch-level hooks (TensorBoard's timing scalars) see every step of the epoch
      stop_requested_ = ranks.end_epoch(stop_requested_, *train_metrics_, o.step_sinks);
      Logs epoch_logs = train_metrics_->logs();
      train_metrics_->warn_undefined(warn, "");
      if (validation) {
        validation_loader->set_epoch(0);
        epoch_logs.merge(run_evaluation(*validation_loader, callbacks, /*reduce=*/true).with_prefix("val_"));
        test_metrics_->warn_undefined(warn, "val_");
        model_->train(true);
      }
      epoch_logs.set("lr", learning_rate());
      callbacks.on_epoch_end(epoch, epoch_logs);
      if (checkpoint_writer_ && !o.steps_per_epoch) {  // a resume at the next epoch starts a new pass
        pass = epoch + 1;
        cursor = 0;
      }
      checkpoint_if_requested(epoch + 1, 0);
      history.append(epoch, epoch_logs);
      last_logs = epoch_logs;
    }
    gradient_buckets_ = ranks.reducer() ? ranks.reducer()->bucket_bytes() : std::vector<int64_t>{};
    callbacks.on_train_end(last_logs);
  } catch (...) {
    callbacks_ = nullptr;
    clock_.set_listener(nullptr);
    try {
      finish_sinks();
    } catch (...) {
      // the first error is the one to report
    }
    throw;
  }
  callbacks_ = nullptr;
  clock_.set_listener(nullptr);
  if (device_timer_) device_timer_->finish();  // the steps the device had not passed yet: one wait
  finish_sinks();
  return history;
}

RunInfo Trainer::run_info() const {
  RunInfo info;
  info.world_size = context().world_size();
  if (info.world_size > 1) info.ranks = &rank_timings_;
  info.communication = &communication_;
  info.gradient_buckets = gradient_buckets_;
  info.device_timer = device_timer_.get();
  info.clock_overhead_ns_per_step = clock_overhead_ns_;
  info.callbacks = callback_timings_;
  info.warnings = warnings_;
  info.loader = loader_stats_;
  info.threads = threads_.choice();
  info.cpu = cpu_utilization_;
  return info;
}

void Trainer::checkpoint_if_requested(int64_t epoch, int64_t batch) {
  if (!checkpoint_writer_) return;
  CheckpointWriter* writer = std::exchange(checkpoint_writer_, nullptr);
  capture_state(writer->acquire(), epoch, batch);
  writer->submit();
}

void Trainer::capture_state(TrainingState& s, int64_t epoch, int64_t batch) {
  s.epoch = epoch;
  s.batch = batch;
  s.pass = pass_;
  s.cursor = cursor_;
  s.global_step = global_step_;
  s.learning_rate = learning_rate();
  const auto named = model_->named_state();
  s.model.resize(named.size());
  for (std::size_t i = 0; i < named.size(); ++i) {
    s.model[i].first = named[i].first;
    detail::copy_into(s.model[i].second, named[i].second);
  }
  detail::copy_optimizer_state(*optimizer_, options_.optimizer == OptimizerKind::adam, s.optimizer, s.optimizer_counts);
  s.rng = at::detail::getDefaultCPUGenerator().get_state();
  s.callbacks.clear();
  if (callbacks_) {
    for (std::size_t i = 0; i < callbacks_->callbacks().size(); ++i) {
      const Callback& c = *callbacks_->callbacks()[i];
      std::string state = c.state();
      if (!state.empty()) s.callbacks[callback_key(c, i)] = std::move(state);
    }
  }
}

void Trainer::restore(const TrainingState& s) {
  const auto named = model_->named_state();
  if (named.size() != s.model.size()) {
    throw std::invalid_argument("the checkpoint holds " + std::to_string(s.model.size()) + " tensors, the model " +
                                std::to_string(named.size()));
  }
  for (std::size_t i = 0; i < named.size(); ++i) {
    if (named[i].first != s.model[i].first || !named[i].second.sizes().equals(s.model[i].second.sizes())) {
      throw std::invalid_argument("the checkpoint's tensor " + s.model[i].first + " does not fit the model's " +
                                  named[i].first);
    }
  }
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < named.size(); ++i) named[i].second.copy_(s.model[i].second);
  detail::load_optimizer_state(*optimizer_, options_.optimizer == OptimizerKind::adam, s.optimizer, s.optimizer_counts);
  set_learning_rate(s.learning_rate);
  if (s.rng.defined()) {
    at::Generator generator = at::detail::getDefaultCPUGenerator();  // a handle on the default generator
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(s.rng);
  }
  global_step_ = s.global_step;
  resume_ = s;
}

Logs Trainer::run_evaluation(Loader& loader, CallbackList& callbacks, bool reduce) {
  const bool batch_logs = callbacks.reads_batch_logs();
  const Logs no_logs;
  torch::NoGradGuard no_grad;
  model_->train(false);
  test_metrics_->reset();
  callbacks.on_test_begin(no_logs);
  for (int64_t b = 0; b < loader.num_batches(); ++b) {
    callbacks.on_test_batch_begin(b, no_logs);
    const Batch batch = loader.next();
    const at::Tensor targets = to_device(batch.targets, options_.device);
    const at::Tensor outputs = model_->forward(to_device(batch.inputs, options_.device));
    test_metrics_->update(outputs, targets, compute_loss(options_.loss, outputs, targets));
    callbacks.on_test_batch_end(b, batch_logs ? test_metrics_->logs() : no_logs);
  }
  if (reduce) dist::all_reduce_metrics(context(), *test_metrics_);
  Logs logs = test_metrics_->logs();
  callbacks.on_test_end(logs);
  return logs;
}

Logs Trainer::evaluate(const TensorDataset& data, const EvaluateOptions& o) {
  return evaluate(std::make_shared<const TensorDataset>(data), o);
}

Logs Trainer::evaluate(std::shared_ptr<const Dataset> data, const EvaluateOptions& o) {
  if (!data) throw std::invalid_argument("evaluate needs a data set, got null");
  FitOptions fit;
  fit.batch_size = o.batch_size;
  fit.workers = 0;
  Loader loader(std::move(data), loader_options(fit, /*training=*/false));  // local: the whole set
  loader.set_epoch(0);
  CallbackList callbacks(o.callbacks);
  Attached attached(callbacks, this);
  return run_evaluation(loader, callbacks, /*reduce=*/false);
}

at::Tensor Trainer::predict(const at::Tensor& inputs, const PredictOptions& o) {
  require_positive(o.batch_size, "batch size");
  if (!inputs.defined() || inputs.dim() == 0) {
    throw std::invalid_argument("predict needs inputs with a batch dimension");
  }
  CallbackList callbacks(o.callbacks);
  Attached attached(callbacks, this);
  const Logs no_logs;
  torch::NoGradGuard no_grad;
  model_->train(false);
  std::vector<at::Tensor> outputs;
  callbacks.on_predict_begin(no_logs);
  const int64_t n = inputs.size(0);
  for (int64_t b = 0, begin = 0; begin < n; ++b, begin += o.batch_size) {
    callbacks.on_predict_batch_begin(b, no_logs);
    const int64_t count = std::min(o.batch_size, n - begin);
    outputs.push_back(model_->forward(to_device(inputs.narrow(0, begin, count), options_.device)));
    callbacks.on_predict_batch_end(b, no_logs);
  }
  callbacks.on_predict_end(no_logs);
  return outputs.empty() ? at::Tensor() : at::cat(outputs);
}

}  // namespace fitscope
