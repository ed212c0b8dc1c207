#include "fitscope/train/trainer.hpp"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/cuda.h>
#include <torch/utils.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <iostream>
#include <numeric>
#include <stdexcept>
#include <utility>

#include "fitscope/callbacks/progress_bar.hpp"
#include "fitscope/checkpoint/weights_export.hpp"
#include "fitscope/data/loading/loader.hpp"
#include "fitscope/data/streams/stream_dataset.hpp"
#include "fitscope/distributed/metric_reduction.hpp"
#include "fitscope/metrics/metric_set.hpp"
#include "fitscope/train/fused_optimizer.hpp"
#include "optimizer_kinds.hpp"
#include "optimizer_state.hpp"
#include "trainer_context.hpp"
#include "trainer_support.hpp"

namespace fitscope {

using detail::Attached;
using detail::callback_key;
using detail::require_positive;
using detail::to_device;

namespace {

/// `x` as %g prints it ("1e+39", "0.001").
std::string shown(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", x);
  return text;
}

void check_optimizer_options(const TrainerOptions& o) {
  const std::string name = optimizer_name(o.optimizer);
  // the weights are float: a rate or decay past float's range makes them infinite at the first update
  constexpr double kFloatMax = std::numeric_limits<float>::max();
  if (!(o.learning_rate > 0 && o.learning_rate <= kFloatMax)) {
    throw std::invalid_argument("learning rate must be > 0 and within float's range (<= " + shown(kFloatMax) + "), got " +
                                shown(o.learning_rate));
  }
  if (o.weight_decay && !(*o.weight_decay >= 0 && *o.weight_decay <= kFloatMax)) {
    throw std::invalid_argument("weight decay must be >= 0 and within float's range (<= " + shown(kFloatMax) + "), got " +
                                shown(*o.weight_decay));
  }
  if (!(std::isfinite(o.momentum) && o.momentum >= 0 && o.momentum < 1)) {
    throw std::invalid_argument("momentum must be in [0, 1), got " + std::to_string(o.momentum));
  }
  if (o.optimizer != OptimizerKind::sgd && (o.momentum > 0 || o.nesterov)) {
    throw std::invalid_argument("TrainerOptions::momentum and TrainerOptions::nesterov apply to optimizer sgd only, got " + name);
  }
  if (o.nesterov && o.momentum == 0) throw std::invalid_argument("nesterov needs a momentum > 0, got 0");
}

}  // namespace

Trainer::Trainer(std::shared_ptr<Model> model, TrainerOptions options)
    : model_(std::move(model)),
      options_(std::move(options)),
      threads_(options_.threads, core_share(options_.context ? options_.context->local_world_size() : 1),
               options_.context ? options_.context->world_size() : 1),
      context_(std::make_unique<Context>(*this)) {
  if (!model_) throw std::invalid_argument("the trainer needs a model, got null");
  if (!options_.context) options_.context = distributed::single_process_context();
  options_.clipping.validate();
  options_.loss_options.validate(options_.loss);
  check_optimizer_options(options_);
  require_positive(options_.accumulate, "accumulate (batches per optimizer step)");
  for (const auto& transform : options_.preprocessing) {
    if (!transform) throw std::invalid_argument("TrainerOptions preprocessing holds a null transform");
  }
  if (options_.device.is_cuda() && !torch::cuda::is_available()) {
    throw std::invalid_argument("device " + options_.device.str() +
                                " requested but this libtorch has no usable CUDA device");
  }
  if (options_.precision == Precision::bfloat16 && !options_.device.is_cpu() && !options_.device.is_cuda()) {
    throw std::invalid_argument("precision bf16 is bfloat16 autocast on the CPU or CUDA, but the device is " +
                                options_.device.str() + " (expected device cpu or cuda, or precision 32)");
  }
  if (options_.precision == Precision::bfloat16 && options_.device.is_cpu() && !cpu_has_bf16_instructions()) {
    warn("precision bf16: this CPU has no bfloat16 instructions (avx512_bf16, amx_bf16), so libtorch converts in "
         "software: expect it slower than precision 32");
  }
  if (options_.metrics.size() == 1 && options_.metrics.front().follows_the_loss()) {  // classes: accuracy; a regression: none
    options_.metrics = options_.loss == Loss::cross_entropy ? std::vector<MetricSpec>{"accuracy"} : std::vector<MetricSpec>{};
  }
  train_metrics_ = std::make_unique<MetricSet>(options_.metrics);
  test_metrics_ = std::make_unique<MetricSet>(options_.metrics);
  model_->to(options_.device);
  const std::vector<at::Tensor> params = model_->parameters();
  optimizer_ = detail::optimizer_kind_entry(options_.optimizer)
                   .make(params, options_, options_.fused_optimizer && FusedOptimizer::supports(params));
  if (!options_.train_step) options_.train_step = standard_train_step;
  measured_.stats = PhaseStats(options_.warmup_steps);
  measured_.threads = threads_.choice();
}

int64_t Trainer::warmup_steps() const {
  return options_.warmup_steps + (options_.timing ? threads_.search_steps_left() : 0);
}

Trainer::~Trainer() = default;

TrainingContext& Trainer::context() { return *context_; }

void Trainer::warn(const std::string& text) {
  measured_.warnings.push_back(text);
  end_progress_line();  // a bar drawn mid-epoch: the warning gets a line of its own
  if (options_.warn) {
    options_.warn(text);
  } else {
    std::cerr << "fitscope: warning: " << text << "\n";
  }
}

History Trainer::fit(const TensorDataset& data, const FitOptions& o) {
  return fit(std::make_shared<const TensorDataset>(data), o);
}

LoaderOptions Trainer::loader_options(const FitOptions& o, bool training) const {
  LoaderOptions l = o.loader;
  if (!training) {  // validation: in order, unaugmented, at full speed
    l.shuffle = false;
    l.drop_last = false;
    l.delay_ms = 0;
    l.transforms.clear();
  }
  l.transforms.insert(l.transforms.end(), options_.preprocessing.begin(), options_.preprocessing.end());
  l.pin_memory = options_.device.is_cuda();
  l.sampler = nullptr;
  return l;
}

LoaderOptions Trainer::sharded_loader_options(const FitOptions& o, bool training, const Dataset& data) const {
  LoaderOptions l = loader_options(o, training);
  const distributed::Context& ranks = this->ranks();
  // a stream holds this rank's shards already (StreamDatasetOptions::rank)
  if (ranks.world_size() == 1 || dynamic_cast<const StreamDataset*>(&data)) return l;
  DistributedSamplerOptions shard = training_shard(o);
  shard.shuffle = l.shuffle;
  shard.drop_last = l.drop_last;
  shard.even = training;  // equal step counts for training; each example once for validation
  l.sampler = std::make_shared<DistributedSampler>(data.size(), shard);
  return l;
}

DistributedSamplerOptions Trainer::training_shard(const FitOptions& o) const {
  DistributedSamplerOptions shard;
  shard.rank = ranks().rank();
  shard.world_size = ranks().world_size();
  shard.shuffle = o.loader.shuffle;
  shard.seed = o.loader.seed;
  shard.drop_last = o.loader.drop_last;
  return shard;
}

std::optional<Logs> Trainer::run_evaluation(Loader& loader, CallbackList& callbacks, bool reduce, bool interruptible) {
  const bool batch_logs = callbacks.reads_batch_logs();
  torch::NoGradGuard no_grad;
  model_->train(false);
  test_metrics_->reset();
  Logs logs;
  callbacks.on_test_begin(logs);
  for (int64_t b = 0; b < loader.num_batches(); ++b) {
    logs = Logs();
    callbacks.on_test_batch_begin(b, logs);
    const Batch batch = loader.next();
    const at::Tensor targets = to_device(batch.targets, options_.device);
    const at::Tensor outputs = forward_in(*model_, to_device(batch.inputs, options_.device), options_.precision);
    test_metrics_->update(outputs, targets, compute_loss(options_.loss, outputs, targets, options_.loss_options));
    logs = batch_logs ? test_metrics_->logs() : Logs();
    callbacks.on_test_batch_end(b, logs);
    if (interruptible && context_->interrupted) break;
  }
  if (interruptible) {
    bool interrupted = context_->interrupted;
    if (reduce && ranks().world_size() > 1) {  // every rank leaves the pass alike, whichever saw the signal
      const at::Tensor flag = at::full({1}, interrupted ? 1.0f : 0.0f);
      ranks().all_reduce(flag);
      interrupted = flag.item<float>() > 0;
    }
    if (interrupted) {
      context_->interrupted = context_->stop = true;
      return std::nullopt;
    }
  }
  if (reduce) distributed::all_reduce_metrics(ranks(), *test_metrics_);
  logs = test_metrics_->logs();
  callbacks.on_test_end(logs);
  return logs;
}

Logs Trainer::evaluate(const TensorDataset& data, const EvaluateOptions& o) {
  return evaluate(std::make_shared<const TensorDataset>(data), o);
}

Logs Trainer::evaluate(std::shared_ptr<const Dataset> data, const EvaluateOptions& o) {
  if (!data) throw std::invalid_argument("evaluate needs a data set, got null");
  detail::require_labels(*data, "evaluate");
  FitOptions fit;
  fit.loader.batch_size = o.batch_size;
  fit.loader.workers = 0;
  Loader loader(std::move(data), loader_options(fit, /*training=*/false));  // local: the whole set
  loader.set_epoch(0);
  CallbackList callbacks(o.callbacks);
  Attached attached(callbacks, context_.get());
  return *run_evaluation(loader, callbacks, /*reduce=*/false, /*interruptible=*/false);
}

at::Tensor Trainer::predict(const at::Tensor& inputs, const PredictOptions& o) {
  if (!inputs.defined() || inputs.dim() == 0) {
    throw std::invalid_argument("predict needs inputs with a batch dimension");
  }
  return predict_batches(inputs.size(0), [&](int64_t begin, int64_t count) { return inputs.narrow(0, begin, count); }, o);
}

at::Tensor Trainer::predict(std::shared_ptr<const Dataset> data, const PredictOptions& o) {
  if (!data) throw std::invalid_argument("predict needs a data set, got null");
  return predict_batches(data->size(), [&](int64_t begin, int64_t count) {
    std::vector<int64_t> indices(static_cast<std::size_t>(count));
    std::iota(indices.begin(), indices.end(), begin);
    return data->get_batch(indices).inputs;
  }, o);
}

at::Tensor Trainer::preprocess(at::Tensor inputs, int64_t first) const {
  if (options_.preprocessing.empty()) return inputs;
  std::vector<int64_t> indices(static_cast<std::size_t>(inputs.size(0)));
  std::iota(indices.begin(), indices.end(), first);
  BatchContext context;
  context.indices = &indices;
  Batch batch{std::move(inputs), at::Tensor()};
  for (const auto& transform : options_.preprocessing) batch = transform->apply(std::move(batch), context);
  return batch.inputs;
}

at::Tensor Trainer::predict_batches(int64_t n, const std::function<at::Tensor(int64_t, int64_t)>& inputs,
                                    const PredictOptions& o) {
  require_positive(o.batch_size, "batch size");
  CallbackList callbacks(o.callbacks);
  Attached attached(callbacks, context_.get());
  torch::NoGradGuard no_grad;
  model_->train(false);
  std::vector<at::Tensor> outputs;
  Logs logs;
  callbacks.on_predict_begin(logs);
  for (int64_t b = 0, begin = 0; begin < n; ++b, begin += o.batch_size) {
    logs = Logs();
    callbacks.on_predict_batch_begin(b, logs);
    const int64_t count = std::min(o.batch_size, n - begin);
    outputs.push_back(forward_in(*model_, to_device(preprocess(inputs(begin, count), begin), options_.device), options_.precision));
    logs = Logs();
    const detail::Shown shown(context_->shown_outputs, &outputs.back());  // the hook's to read, and only its
    callbacks.on_predict_batch_end(b, logs);
  }
  logs = Logs();
  callbacks.on_predict_end(logs);
  return outputs.empty() ? at::Tensor() : at::cat(outputs);
}

void Trainer::load_weights(const std::string& path) {
  const NamedTensors weights = fitscope::load_weights(path);
  torch::NoGradGuard no_grad;
  for (auto& [name, tensor] : model_->named_state()) {
    const auto found = std::find_if(weights.begin(), weights.end(), [&name = name](const auto& w) { return w.first == name; });
    if (found == weights.end()) throw std::invalid_argument("weights file " + path + ": no tensor " + name + " (the model's)");
    if (!found->second.sizes().equals(tensor.sizes())) {
      throw std::invalid_argument("weights file " + path + ": tensor " + name + " has shape " + c10::str(found->second.sizes()) +
                                  ", the model's " + c10::str(tensor.sizes()));
    }
    tensor.copy_(found->second);
  }
}

}  // namespace fitscope
