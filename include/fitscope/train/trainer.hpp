#pragma once
/// Trainer: Keras's fit / evaluate / predict for a Model, with every training step timed phase by phase.
///
/// The Trainer owns the optimizer, the metrics and the step clock, and shares ownership of the model.
/// fit() runs the loop on the calling thread (the training thread); callbacks are called there, with
/// Keras's semantics (see callback.hpp), and reach the fit through the TrainingContext the Trainer
/// keeps as a private part (context()). After fit(), measured() holds what the fit measured: the
/// distributions of its steps (warm-up excluded) and the rest; Run (run/run.hpp) turns them into the
/// run directory. Not thread-safe: one fit/evaluate/predict at a time, from one thread.

#include <ATen/core/Tensor.h>
#include <torch/optim/optimizer.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "fitscope/callbacks/callback.hpp"
#include "fitscope/callbacks/training_context.hpp"
#include "fitscope/checkpoint/training_state.hpp"
#include "fitscope/data/sources/dataset.hpp"
#include "fitscope/data/loading/loader.hpp"
#include "fitscope/data/sources/tensor_dataset.hpp"
#include "fitscope/data/loading/transforms.hpp"
#include "fitscope/distributed/context.hpp"
#include "fitscope/distributed/gradient_reducer.hpp"
#include "fitscope/metrics/metric.hpp"
#include "fitscope/metrics/metric_set.hpp"
#include "fitscope/metrics/metric_spec.hpp"
#include "fitscope/threads/trainer_threads.hpp"
#include "fitscope/timing/detail/slow_hook.hpp"
#include "fitscope/timing/device_timer.hpp"
#include "fitscope/summary/fit_measurements.hpp"
#include "fitscope/timing/phase_stats.hpp"
#include "fitscope/timing/step_clock.hpp"
#include "fitscope/timing/step_sink.hpp"
#include "fitscope/train/cuda_graph.hpp"
#include "fitscope/train/history.hpp"
#include "fitscope/metrics/logs.hpp"
#include "fitscope/train/loss.hpp"
#include "fitscope/train/lr_schedule.hpp"
#include "fitscope/train/optimizer_kind.hpp"
#include "fitscope/train/precision.hpp"
#include "fitscope/train/step_capture.hpp"
#include "fitscope/models/model.hpp"
#include "fitscope/train/train_step.hpp"

namespace fitscope {

/// How the model is trained (Keras's compile()).
struct TrainerOptions {
  Loss loss = Loss::cross_entropy;             ///< the loss
  LossOptions loss_options;                    ///< label smoothing, class weights, Huber's delta
  OptimizerKind optimizer = OptimizerKind::adam;  ///< the rule of libtorch's Adam, AdamW or SGD
  /// Runs the optimizer as a FusedOptimizer (fused_optimizer.hpp: one vectorized pass per parameter)
  /// when the parameters are float32 on the CPU; off, or on another device, libtorch's torch::optim.
  bool fused_optimizer = true;
  double learning_rate = 1e-3;                 ///< initial learning rate (> 0)
  /// The forward pass's number format (precision.hpp): float32, or bfloat16 autocast on the CPU or a
  /// CUDA device with the loss and the weights in float32. Applies to fit, evaluate and predict.
  Precision precision = Precision::float32;
  /// The learning rate over the run (lr_schedule.hpp), replacing learning_rate from the first batch;
  /// empty = constant (callbacks may still change it).
  LrSchedule lr_schedule;
  /// Weight decay (>= 0); unset = the optimizer's default: 0.01 for AdamW (PyTorch's), else 0.
  std::optional<double> weight_decay;
  double momentum = 0;    ///< SGD's momentum, in [0, 1) (another optimizer refuses a non-zero one)
  bool nesterov = false;  ///< SGD's Nesterov momentum (needs momentum > 0)
  /// Metrics besides the loss: built-ins by name, user metrics by factory (metric_spec.hpp); {} = none
  /// (Keras's metrics=[]). The default follows the loss: {"accuracy"} for cross_entropy, none for
  /// mean_squared_error.
  std::vector<MetricSpec> metrics = {MetricSpec::following_the_loss()};
  c10::Device device = c10::Device(c10::kCPU);  ///< where the model and batches live
  /// Preprocessing (Keras's preprocessing layers; torchvision's Normalize): deterministic transforms
  /// applied in order to every batch the model sees: training and validation batches of fit (after
  /// the augmentation of LoaderOptions::transforms, in the loader's workers), evaluate and predict.
  /// The model's input contract: weights trained with it are only right with it. Default: none.
  std::vector<std::shared_ptr<Transform>> preprocessing;
  int64_t warmup_steps = 5;                    ///< first steps left out of the statistics (>= 0)
  /// Capture the whole training step as a CUDA graph and replay it (cuda_graph.hpp): auto (when the
  /// step is launch-bound and the replay measurably faster), on, or off. Only the standard step, in
  /// float32, in one process, without accumulation or clipping, is captured; others run eagerly and
  /// measured().cuda_graph says why.
  CudaGraphMode cuda_graph = CudaGraphMode::automatic;
  /// Where the step is captured: empty = CUDA graphs on a CUDA device, nothing elsewhere. Tests give a
  /// stand-in that replays by running the step again.
  std::function<std::unique_ptr<StepCapture>()> step_capture;
  /// Where the layer probe's device events come from: empty = CUDA events on a CUDA device and the
  /// host's clock elsewhere. Tests give a stand-in device on a CPU.
  std::function<std::unique_ptr<DeviceEventSource>()> layer_events;
  TrainStep train_step;                        ///< a custom step; empty = standard_train_step
  /// Gradient clipping before each optimizer step (by global norm or by value; off by default).
  GradientClipping clipping;
  /// Gradient accumulation (Lightning's accumulate_grad_batches): batches per optimizer step (>= 1).
  /// Each batch is still a step of the loop, timed and seen by the batch hooks; the weights change
  /// after every `accumulate`-th batch of an epoch and after its last one, from the mean of the group's
  /// losses; a data-parallel run communicates on those batches only.
  int64_t accumulate = 1;
  bool timing = true;                          ///< read the step clock (off only to measure its cost)
  /// Time each layer and count its floating-point operations on one step in `layer_probe_every` after
  /// the warm-up (measured().layers, layer_times.hpp; those steps are left out of the distributions).
  /// 0 = auto: spaced so that the probes cost at most `layer_probe_max_cost` of the run's step time
  /// (one in 64 in a data-parallel run, whose ranks must probe the same steps); -1 = never. On a CPU
  /// the layers' times are the host's; on a CUDA device the device's, from CUDA events (layers.clock).
  int64_t layer_probe_every = 0;
  double layer_probe_max_cost = 0.02;
  /// After a fit whose layers were probed on a CPU, the machine's peak on the fit's cores
  /// (measured().peak, measure_peak.hpp: ~0.3 s the first time a machine runs a setting, then cached).
  bool measure_peak = true;
  /// Count the tensor memory the steps hold and allocate, phase by phase (measured().memory,
  /// memory_stats.hpp): on a CPU through a counting CPU allocator installed for the process at the
  /// first fit that tracks it; on a GPU from the CUDA caching allocator's statistics, whose peak each
  /// phase boundary resets (torch.cuda.reset_peak_memory_stats).
  bool track_memory = true;
  /// keep_freed_memory() when a fit starts: the memory a step frees stays for the next step instead of
  /// being faulted in again (freed_memory.hpp; process-wide; off leaves the C library's defaults).
  bool keep_freed_memory = true;
  /// A batch hook whose p50 reaches this fraction of the step's p50 gets a slow-callback warning.
  double slow_callback_threshold = detail::kSlowHookShare;
  /// Receives warnings (slow callbacks, ...); empty = print "fitscope: warning: ..." to stderr.
  std::function<void(const std::string&)> warn;
  /// The ranks of a data-parallel run (distributed::context_from_environment()); null = this process alone.
  /// With more than one rank, fit shards the training and validation sets (DistributedSampler),
  /// averages gradients (GradientReducer, starting from rank 0's weights), runs the chief-only
  /// callbacks on rank 0 alone, computes epoch logs from metric states summed over ranks, agrees on
  /// stopping after every step, and gathers every rank's step records at each epoch end (the step
  /// sinks get all ranks' records). evaluate() and predict() stay local.
  std::shared_ptr<distributed::Context> context;
  /// Gradient bucket sizes (DDP's defaults).
  distributed::GradientReducerOptions buckets;
  /// The compute pools' threads (thread_policy.hpp), applied at every fit on this rank's share of the
  /// cores. Auto (the default) measures the candidates on the first fit's first steps, which count as
  /// warm-up (warmup_steps() says how many), and keeps the fastest for this trainer's later fits.
  ThreadOptions threads;
};

/// One fit() call (Keras's fit arguments).
struct FitOptions {
  int64_t epochs = 1;          ///< index of the epoch to stop before (as in Keras, with initial_epoch)
  int64_t initial_epoch = 0;   ///< epoch to start at (for resuming)
  /// How the training set is batched and loaded: batch size, shuffle and seed, drop_last, workers and
  /// prefetch, the artificial delay, transforms (augmentation: training batches only; a Normalize
  /// there is refused, since it belongs in TrainerOptions::preprocessing), cache. Validation uses its
  /// batch size, workers, prefetch and cache, in order and unaugmented. The fit sets pin_memory (on a GPU) and the
  /// sampler (each rank's shard) itself.
  LoaderOptions loader;
  double validation_split = 0;  ///< fraction of the training set (its end) held out; 0 = none
  std::shared_ptr<const Dataset> validation_data;  ///< explicit validation set (wins over the split)
  /// Steps per epoch; unset = one pass over the training set. When larger than a pass, the epoch
  /// continues into the next shuffled pass.
  std::optional<int64_t> steps_per_epoch;
  /// Validate at the end of every `validation_freq`-th epoch (1-based: N, 2N, ...; Keras's
  /// validation_freq); >= 1.
  int64_t validation_freq = 1;
  /// Stop after this many batches of this fit (Lightning's max_steps, counted in batches); unset = none.
  std::optional<int64_t> max_steps;
  /// Stop at the first batch end after this many seconds of the fit (adds a TimeLimit callback); unset = none.
  std::optional<double> max_time_s;
  std::vector<std::shared_ptr<Callback>> callbacks;  ///< called in order
  std::vector<std::shared_ptr<StepSink>> step_sinks;  ///< get every StepRecord (steps.csv, ...)
  /// Metrics for this fit and later evaluations (replacing TrainerOptions::metrics); unset = keep.
  std::optional<std::vector<MetricSpec>> metrics;
};

struct EvaluateOptions {
  int64_t batch_size = 32;                           ///< examples per batch (>= 1)
  std::vector<std::shared_ptr<Callback>> callbacks;  ///< get the on_test_* hooks
};

struct PredictOptions {
  int64_t batch_size = 32;                           ///< examples per batch (>= 1)
  std::vector<std::shared_ptr<Callback>> callbacks;  ///< get the on_predict_* hooks
};

class Trainer {
 public:
  /// Throws std::invalid_argument for bad options (naming the field and value).
  explicit Trainer(std::shared_ptr<Model> model, TrainerOptions options = {});
  /// Any module handle with `at::Tensor forward(at::Tensor)` (see make_model).
  template <typename M, typename = std::enable_if_t<!std::is_convertible_v<M, std::shared_ptr<Model>>>>
  explicit Trainer(M module, TrainerOptions options = {})
      : Trainer(make_model(std::move(module)), std::move(options)) {}
  ~Trainer();

  /// Trains; returns the epoch logs. Throws std::invalid_argument for bad options; a callback's or
  /// sink's exception ends the run and propagates (sinks are flushed first).
  History fit(std::shared_ptr<const Dataset> train, const FitOptions& options = {});
  History fit(const TensorDataset& train, const FitOptions& options = {});
  /// Loss and metrics over `data` (on_test_* hooks).
  Logs evaluate(std::shared_ptr<const Dataset> data, const EvaluateOptions& options = {});
  Logs evaluate(const TensorDataset& data, const EvaluateOptions& options = {});
  /// The model's outputs for `inputs`, batch by batch (on_predict_* hooks).
  at::Tensor predict(const at::Tensor& inputs, const PredictOptions& options = {});
  /// The model's outputs for every example of `data`, in order, read batch by batch.
  at::Tensor predict(std::shared_ptr<const Dataset> data, const PredictOptions& options = {});
  /// Keras's load_weights: copies the tensors of a weights file (model.weights.pt, weights_export.hpp)
  /// into the model's parameters and buffers of the same names. Throws std::invalid_argument naming the
  /// file and the tensor when a model tensor is missing from it or differs in shape.
  void load_weights(const std::string& path);

  /// The trainer as its callbacks see it (training_context.hpp): the model, stopping, the learning
  /// rate, the global step, the step timings so far, warnings, and a checkpoint of "now" to capture or
  /// to restore (before fit, to resume). A private part of the trainer, alive as long as it.
  TrainingContext& context();
  /// The model being trained.
  Model& model() { return *model_; }
  /// The optimizer (a FusedOptimizer where TrainerOptions::fused_optimizer applies, else torch::optim's).
  torch::optim::Optimizer& optimizer() { return *optimizer_; }
  /// The options, validated (context set: a single-process one when none was given).
  const TrainerOptions& options() const { return options_; }
  /// Steps the next fit leaves out of its statistics: TrainerOptions::warmup_steps plus what is left of
  /// the thread search.
  int64_t warmup_steps() const;
  /// What the last fit measured: the step distributions (warm-up excluded), every rank's steps,
  /// communication, device timing, callbacks, loader, threads, CPU, warnings, and its wall time
  /// around the steps.
  const FitMeasurements& measured() const { return measured_; }

 private:
  class Context;  // the TrainingContext (trainer_context.hpp)
  struct Fit;     // one fit's running state and the named steps of its loop (fit.cpp)
  /// Reports a warning: kept in measured() and printed (or handed to TrainerOptions::warn).
  void warn(const std::string& text);
  /// `inputs` (examples first, first..) after TrainerOptions::preprocessing.
  at::Tensor preprocess(at::Tensor inputs, int64_t first) const;
  /// The outputs for `n` examples, `inputs` giving those of each batch.
  at::Tensor predict_batches(int64_t n, const std::function<at::Tensor(int64_t begin, int64_t count)>& inputs,
                             const PredictOptions& options);
  /// The metrics of a pass over `loader`, summed over the ranks with `reduce` (each holds a shard); none when `interruptible`
  /// and interrupt() was called on any rank (the pass then ends at the next batch).
  std::optional<Logs> run_evaluation(Loader& loader, CallbackList& callbacks, bool reduce, bool interruptible);
  /// The loader options of `fit` for its training set (or, with `training` off, for evaluation).
  LoaderOptions loader_options(const FitOptions& fit, bool training) const;
  /// loader_options reading this rank's shard of `data` in a data-parallel run (a stream is one already; fit's
  /// loaders; evaluate() stays local).
  LoaderOptions sharded_loader_options(const FitOptions& fit, bool training, const Dataset& data) const;
  /// This rank's shard of a training set in a data-parallel run (what sharded_loader_options samples).
  DistributedSamplerOptions training_shard(const FitOptions& fit) const;
  distributed::Context& ranks() const { return *options_.context; }

  std::shared_ptr<Model> model_;
  TrainerOptions options_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::unique_ptr<MetricSet> train_metrics_;
  std::unique_ptr<MetricSet> test_metrics_;
  StepClock clock_;
  std::shared_ptr<DeviceTimer> device_timer_;
  FitMeasurements measured_;
  TrainerThreads threads_;
  CpuUsage cpu_;
  std::unique_ptr<Context> context_;
};

}  // namespace fitscope
