// A rank of the distributed tests, started by `fitscope launch` (or alone, as a world of one).
//   dist_worker step OUT BATCH [ACCUMULATE]
//                                one SGD update on the first examples, in order, from ACCUMULATE
//                                batches (default 1); writes OUT/rank<R>.bin and OUT/rank<R>.sums, the
//                                count of all-reduces of more than one value (gradient buckets)
//   dist_worker train OUT        two epochs with validation; writes OUT/rank<R>.bin and, on rank 0,
//                                OUT/result.json with the reduced epoch accuracies and the ones
//                                computed here over the whole sets
// .bin files hold the model's parameters as float32, concatenated.

#include <ATen/ATen.h>
#include <torch/torch.h>

#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

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

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: dist_worker step OUT BATCH | train OUT\n";
    return 2;
  }
  const std::string mode = argv[1], out = argv[2];
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
