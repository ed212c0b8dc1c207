// A rank of the distributed tests, started by `fitscope launch` (or alone, as a world of one).
//   dist_worker step OUT BATCH [ACCUMULATE]
//                                one SGD update on the first examples, in order, from ACCUMULATE
//                                batches (default 1); writes OUT/rank<R>.bin and OUT/rank<R>.sums, the
//                                count of all-reduces of more than one value (gradient buckets)
//   dist_worker train OUT        two epochs with validation; writes OUT/rank<R>.bin and, on rank 0,
//                                OUT/result.json with the reduced epoch accuracies and the ones
//                                computed here over the whole sets
//   dist_worker straggle OUT MS  two epochs as a Run into the run directory OUT, rank 1's backward
//                                MS ms slower than the others' (a sleep in its autograd graph)
//   dist_worker fail OUT STEP    two epochs as a Run into OUT; rank 1 fails at its step STEP with a
//                                data error of its own (exit 1, the error on stderr)
//   dist_worker elastic OUT RECORDS STOP [DELAY_MS] [DATA]
//                                two epochs of 960 examples, batch 8, as a Run into OUT with a backup
//                                every 4 batches, resumed from its newest backup when there is one;
//                                interrupted after STOP steps of this process (0: never); each batch
//                                loaded DELAY_MS ms late (default 0). DATA: `memory` (default: example
//                                i's first value is i), `folder:DIR` (an image folder of 8x8 gray
//                                PNGs, image i's first two pixels i % 256 and i / 256) or
//                                `tfrecord:GLOB` (shards of tf.train.Examples, feature x 64 floats,
//                                x[0] = i, y its class), a stream shuffled in a buffer of 16. Each rank
//                                appends the index of every example it trains on to
//                                RECORDS/w<WORLD>-r<RANK>.txt, a line each
//   dist_worker elastic-data folder|tfrecord DIR
//                                writes `elastic`'s DATA of 960 examples into DIR: the folder's PNGs
//                                under class_<i % 10>/, or 8 shards part-<k>.tfrecord of 120 records
// .bin files hold the model's parameters as float32, concatenated.

#include <ATen/ATen.h>
#include <torch/torch.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>
#include <iostream>
#include <nlohmann/json.hpp>

#include "data/formats/image_codec.hpp"
#include "fitscope/fitscope.hpp"

namespace {

using namespace fitscope;

void write_parameters(Model& model, const std::string& path) {
  std::ofstream out(path, std::ios::binary);
  for (const auto& p : model.parameters()) {
    const at::Tensor flat = p.detach().to(at::kFloat).contiguous();
    out.write(reinterpret_cast<const char*>(flat.data_ptr<float>()), static_cast<std::streamsize>(flat.numel() * 4));
  }
}

TensorDataset examples(int64_t size, uint64_t seed) {
  SyntheticOptions s;
  s.size = size;
  s.seed = seed;
  s.image_size = 8;
  s.max_shift = 1;
  return make_synthetic(s);
}

/// Counts the all-reduces of more than one value (the stop agreement sums one flag).
class CountingContext : public distributed::Context {
 public:
  explicit CountingContext(std::shared_ptr<distributed::Context> inner) : inner_(std::move(inner)) {}
  int64_t rank() const override { return inner_->rank(); }
  int64_t world_size() const override { return inner_->world_size(); }
  int64_t local_rank() const override { return inner_->local_rank(); }
  int64_t local_world_size() const override { return inner_->local_world_size(); }
  std::unique_ptr<distributed::PendingCollective> all_reduce_async(const at::Tensor& tensor) override {
    if (tensor.numel() > 1) ++sums;
    return inner_->all_reduce_async(tensor);
  }
  void broadcast(const at::Tensor& tensor, int64_t root) override { inner_->broadcast(tensor, root); }
  at::Tensor all_gather(const at::Tensor& tensor) override { return inner_->all_gather(tensor); }
  void barrier() override { inner_->barrier(); }
  int64_t sums = 0;

 private:
  std::shared_ptr<distributed::Context> inner_;
};

/// A user metric: the mean of the largest logit, as a sum and a count that add across ranks.
class MeanTopLogit : public MeanMetric {
 public:
  std::string name() const override { return "mean_top_logit"; }
  void update(const at::Tensor& outputs, const at::Tensor& targets, const at::Tensor&) override {
    accumulate(std::get<0>(outputs.max(1)).sum(), targets.size(0));
  }
};

/// The identity, whose backward sleeps `ms` ms first: a rank whose backward is slower than its peers'.
struct SlowBackward : torch::autograd::Function<SlowBackward> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x, int64_t ms) {
    ctx->saved_data["ms"] = ms;
    return x.clone();
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx, torch::autograd::variable_list grad) {
    std::this_thread::sleep_for(std::chrono::milliseconds(ctx->saved_data["ms"].toInt()));
    return {grad[0], at::Tensor()};
  }
};

struct DelayedMlpImpl : torch::nn::Module {
  explicit DelayedMlpImpl(int64_t delay_ms) : mlp(register_module("mlp", models::Mlp(64, 10))), delay_ms(delay_ms) {}
  at::Tensor forward(const at::Tensor& x) {
    const at::Tensor y = mlp->forward(x);
    return delay_ms > 0 ? SlowBackward::apply(y, delay_ms) : y;
  }
  models::Mlp mlp;
  int64_t delay_ms;
};
TORCH_MODULE(DelayedMlp);

/// The MLP, which appends the index of every example it trains on (its input's first feature) to a file.
struct RecordingMlpImpl : torch::nn::Module {
  /// `pixels`: the index is in the first two pixels of an image read as bytes / 255.
  RecordingMlpImpl(std::string path, bool pixels)
      : mlp(register_module("mlp", models::Mlp(64, 10))), records(path, std::ios::app), pixels(pixels) {}
  at::Tensor forward(const at::Tensor& x) {
    if (is_training()) {
      const at::Tensor flat = x.flatten(1);
      const at::Tensor index = pixels ? (flat.select(1, 0) * 255).round().to(at::kLong) + (flat.select(1, 1) * 255).round().to(at::kLong) * 256
                                      : flat.select(1, 0).to(at::kLong);
      for (int64_t i = 0; i < index.size(0); ++i) records << index[i].item<int64_t>() << '\n';
      records.flush();
    }
    return mlp->forward(x);
  }
  models::Mlp mlp;
  std::ofstream records;
  bool pixels;
};
TORCH_MODULE(RecordingMlp);

/// Fails at its step `step` with an error of its own, as a bad record would.
class FailAt : public Callback {
 public:
  explicit FailAt(int64_t step) : step_(step) {}
  void on_train_batch_end(int64_t, Logs&) override {
    if (++seen_ == step_) throw std::runtime_error("shard-00001.tfrecord: bad record at offset 1234 (a data error of rank 1)");
  }

 private:
  int64_t step_, seen_ = 0;
};

/// Interrupts the run after `steps` batches with SIGINT, as Ctrl-C does: it stops at the step's end
/// and keeps a backup there to resume from.
class InterruptAfter : public Callback {
 public:
  explicit InterruptAfter(int64_t steps) : steps_(steps) {}
  void on_train_batch_end(int64_t, Logs&) override {
    if (++seen_ == steps_) std::raise(SIGINT);
  }

 private:
  int64_t steps_, seen_ = 0;
};

/// A Run into the run directory `out` at Keras's `verbose` level, without a progress bar.
RunOptions run_into(const std::string& out, int verbose) {
  RunOptions o;
  o.run_dir = out;
  o.verbose = verbose;
  o.progress_bar = false;
  return o;
}

/// Two epochs in batches of `batch`, built on the training thread.
FitOptions two_epochs(int64_t batch) {
  FitOptions fit;
  fit.epochs = 2;
  fit.loader.batch_size = batch;
  fit.loader.workers = 0;
  return fit;
}

/// `dist_worker elastic-data`: example i numbered in its first values, with a mark to learn by.
void write_elastic_data(const std::string& kind, const std::string& dir) {
  if (kind == "folder") {
    for (int64_t i = 0; i < 960; ++i) {
      fitscope::detail::Pixels pixels{8, 8, 1, std::vector<uint8_t>(64, 0)};
      pixels.data[0] = static_cast<uint8_t>(i % 256);
      pixels.data[1] = static_cast<uint8_t>(i / 256);
      pixels.data[static_cast<std::size_t>(2 + i % 60)] = 255;
      const std::string folder = dir + "/class_" + std::to_string(i % 10);
      std::filesystem::create_directories(folder);
      std::ofstream(folder + "/" + std::to_string(i) + ".png", std::ios::binary) << fitscope::detail::encode(pixels, fitscope::detail::ImageFormat::png);
    }
    return;
  }
  for (int64_t shard = 0; shard < 8; ++shard) {
    std::ofstream out(dir + "/part-" + std::to_string(shard) + ".tfrecord", std::ios::binary);
    for (int64_t i = shard * 120; i < (shard + 1) * 120; ++i) {
      std::vector<float> x(64, 0.0f);
      x[0] = static_cast<float>(i);
      x[static_cast<std::size_t>(1 + i % 63)] = 1.0f;
      ExampleFeatures example;
      example.features["x"] = x;
      example.features["y"] = std::vector<int64_t>{i % 10};
      write_tfrecord(out, serialize_example(example));
    }
  }
}

/// `dist_worker elastic`'s DATA.
std::shared_ptr<const Dataset> elastic_data(const std::string& data, const distributed::Context& context) {
  if (data.rfind("folder:", 0) == 0) {
    ImageFolderOptions o;
    o.channels = 1;
    return std::make_shared<ImageFolderDataset>(data.substr(7), o);
  }
  if (data.rfind("tfrecord:", 0) == 0) {
    StreamDatasetOptions o;
    o.decoder.features = RecordFeatures::parse("x,y");
    o.shuffle_buffer = 16;
    o.seed = 5;
    o.rank = context.rank();
    o.world_size = context.world_size();
    return std::make_shared<StreamDataset>(data.substr(9), o);
  }
  auto memory = std::make_shared<TensorDataset>(examples(960, 5));
  memory->inputs().flatten(1).select(1, 0).copy_(at::arange(960, at::kFloat));  // each example's index, exact in float
  return memory;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: dist_worker step OUT BATCH | train OUT | straggle OUT MS | fail OUT STEP | elastic OUT RECORDS STOP [DELAY_MS] [DATA] | elastic-data folder|tfrecord DIR\n";
    return 2;
  }
  const std::string mode = argv[1], out = argv[2];
  if (mode == "elastic-data" && argc > 3) {
    write_elastic_data(out, argv[3]);
    return 0;
  }
  auto context = distributed::context_from_environment(std::chrono::seconds(30));
  at::set_num_threads(1);
  torch::manual_seed(7);
  TrainerOptions options;
  options.optimizer = OptimizerKind::sgd;
  options.context = context;
  options.warmup_steps = 0;
  const std::string prefix = out + "/rank" + std::to_string(context->rank());
  if (mode == "step") {
    auto counting = std::make_shared<CountingContext>(context);
    options.context = counting;
    options.learning_rate = 0.5;
    options.accumulate = argc > 4 ? std::stoll(argv[4]) : 1;
    Trainer trainer(models::Mlp(64, 10), options);
    FitOptions fit;
    fit.loader.batch_size = std::stoll(argv[3]);
    fit.loader.shuffle = false;
    fit.steps_per_epoch = options.accumulate;
    fit.loader.workers = 0;
    const int64_t before = counting->sums;  // the start's broadcasts are not sums
    trainer.fit(examples(256, 1), fit);
    write_parameters(trainer.model(), prefix + ".bin");
    std::ofstream(prefix + ".sums") << counting->sums - before;
    return 0;
  }
  if (mode == "straggle") {
    Run run(run_into(out, 1));
    Trainer trainer(DelayedMlp(context->rank() == 1 ? std::stoll(argv[3]) : 0), options);
    std::cout << format_summary(run.fit(trainer, examples(1200, 4), two_epochs(16)));
    return 0;
  }
  if (mode == "fail") {
    Run run(run_into(out, 0));
    Trainer trainer(models::Mlp(64, 10), options);
    FitOptions fit = two_epochs(8);
    if (context->rank() == 1) fit.callbacks.push_back(std::make_shared<FailAt>(std::stoll(argv[3])));
    try {
      run.fit(trainer, examples(960, 6), fit);
    } catch (const std::exception& e) {
      std::cerr << "dist_worker: " << e.what() << "\n";
      std::cerr.flush();
      std::_Exit(1);  // a peer's failure may leave the process group bound to a dead peer
    }
    return 0;
  }
  if (mode == "elastic") {
    const std::string records = argv[3];
    const int64_t stop = std::stoll(argv[4]);
    RunOptions run_options = run_into(out, 1);
    run_options.backup = true;
    run_options.backup_every_batches = 4;
    run_options.resume = std::filesystem::exists(out + "/backup");
    Run run(run_options);
    const std::string data = argc > 6 ? argv[6] : "memory";
    Trainer trainer(RecordingMlp(records + "/w" + std::to_string(context->world_size()) + "-r" + std::to_string(context->rank()) + ".txt",
                                 data.rfind("folder:", 0) == 0),
                    options);
    FitOptions fit = two_epochs(8);
    fit.loader.delay_ms = argc > 5 ? std::stod(argv[5]) : 0.0;
    if (stop > 0) fit.callbacks.push_back(std::make_shared<InterruptAfter>(stop));
    run.fit(trainer, elastic_data(data, *context), fit);
    return 0;
  }
  // train: lr so small that the weights stay put, so the epoch's training accuracy is the accuracy
  // of the initial model over the union of the shards, which this process can compute alone
  options.learning_rate = 1e-30;
  options.metrics = std::vector<MetricSpec>{"accuracy", MetricSpec::of<MeanTopLogit>()};
  Trainer trainer(models::Mlp(64, 10), options);
  const TensorDataset train = examples(600, 2);
  const auto validation = std::make_shared<TensorDataset>(examples(101, 3));  // odd: shards differ
  const double whole_train = trainer.evaluate(train).get("accuracy").value();
  FitOptions fit;
  fit.epochs = 2;
  fit.loader.batch_size = 32;
  fit.validation_data = validation;
  const History history = trainer.fit(train, fit);
  write_parameters(trainer.model(), prefix + ".bin");
  if (context->is_chief()) {
    const Logs whole = trainer.evaluate(validation);
    nlohmann::json result = {{"world_size", context->world_size()},
                             {"accuracy", history.last().get("accuracy").value()},
                             {"whole_train_accuracy", whole_train},
                             {"val_accuracy", history.last().get("val_accuracy").value()},
                             {"whole_validation_accuracy", whole.at("accuracy")},
                             {"val_mean_top_logit", history.last().at("val_mean_top_logit")},
                             {"whole_validation_mean_top_logit", whole.at("mean_top_logit")}};
    std::ofstream(out + "/result.json") << result.dump(2);
  }
  return 0;
}
