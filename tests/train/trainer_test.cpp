#include <gtest/gtest.h>

#include <torch/nn/modules/linear.h>
#include <torch/utils.h>

#include <algorithm>
#include <filesystem>

#include "fitscope/checkpoint/weights_export.hpp"
#include "fitscope/data/sources/subset_dataset.hpp"
#include "fitscope/data/sources/synthetic.hpp"
#include "fitscope/models/mlp.hpp"
#include "fitscope/train/trainer.hpp"

using namespace fitscope;

namespace {

class CollectingSink : public StepSink {
 public:
  std::vector<StepRecord> records;
  bool finished = false;
  void on_step(const StepRecord& r) override { records.push_back(r); }
  void finish() override { finished = true; }
};

TensorDataset small_synthetic(int64_t size = 600) {
  SyntheticOptions o;
  o.size = size;
  return make_synthetic(o);
}

template <typename F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "no exception";
}

}  // namespace

TEST(Trainer, TheSeedMlpLearnsTheBuiltInSetFarAboveChance) {
  torch::manual_seed(0);
  Trainer trainer{models::Mlp()};
  FitOptions fit;
  fit.epochs = 2;
  fit.validation_split = 0.2;
  const History h = trainer.fit(small_synthetic(3000), fit);
  EXPECT_GT(h.last().at("val_accuracy"), 0.5);  // chance is 0.1
  EXPECT_LT(h.at("loss").back(), h.at("loss").front());
}

TEST(Trainer, EveryStepReachesTheSinksAndTheWarmupIsLeftOutOfTheStatistics) {
  TrainerOptions options;
  options.warmup_steps = 4;
  options.threads.intra_op = 1;  // no thread search: the warm-up is warmup_steps alone
  Trainer trainer(models::Mlp(), options);
  auto sink = std::make_shared<CollectingSink>();
  FitOptions fit;
  fit.epochs = 2;
  fit.loader.batch_size = 50;  // 600 / 50 = 12 steps an epoch
  fit.step_sinks = {sink};
  trainer.fit(small_synthetic(), fit);
  ASSERT_EQ(sink->records.size(), 24u);
  EXPECT_TRUE(sink->finished);
  EXPECT_EQ(sink->records[13].epoch, 1);
  EXPECT_EQ(sink->records[13].batch, 1);
  EXPECT_EQ(trainer.measured().stats.steps(), 24);
  // 20 steps after the warm-up are too few for the layer probe's auto to spare one
  EXPECT_EQ(trainer.measured().layers.probed_steps, 0);
  EXPECT_EQ(trainer.measured().stats.measured_steps(), 20);
  EXPECT_EQ(trainer.measured().stats.measured_samples(), 20 * 50);
  for (const auto& r : sink->records) {
    EXPECT_GT(r.phase(Phase::forward), 0);
    EXPECT_GT(r.phase(Phase::backward), 0);
    EXPECT_GT(r.phase(Phase::optimizer), 0);
    EXPECT_GT(r.phase(Phase::metrics), 0);
    EXPECT_GE(r.phase(Phase::other), 0);
  }
  EXPECT_GT(trainer.measured().clock_overhead_ns_per_step, 0);
}

TEST(Trainer, ACustomTrainStepRunsInTheSameLoopAndIsTimedByTheSameClock) {
  int calls = 0;
  TrainerOptions options;
  options.warmup_steps = 0;
  options.threads.intra_op = 1;  // no thread search: every step is measured
  options.layer_probe_every = 2;  // the 5th step's layers probed (a fit this short: auto probes none)
  options.train_step = [&calls](const Batch& batch, StepContext& ctx) {
    ++calls;
    at::Tensor outputs, loss;
    {
      PhaseTimer t(ctx.clock, Phase::forward);
      outputs = ctx.model.forward(batch.inputs);
      loss = compute_loss(ctx.loss, outputs, batch.targets) * 2.0;  // the user's own twist
    }
    {
      PhaseTimer t(ctx.clock, Phase::backward);
      loss.backward();
    }
    {
      PhaseTimer t(ctx.clock, Phase::optimizer);
      ctx.optimizer.step();
      ctx.optimizer.zero_grad();
    }
    return StepOutput{loss.detach(), outputs.detach()};
  };
  Trainer trainer(models::Mlp(), options);
  FitOptions fit;
  fit.loader.batch_size = 100;
  trainer.fit(small_synthetic(), fit);
  EXPECT_EQ(calls, 6);
  // the 5th step's layers probed, in the custom step's forward and backward phases
  const LayerTimes& layers = trainer.measured().layers;
  EXPECT_EQ(layers.probed_steps, 1);
  ASSERT_FALSE(layers.layers.empty());
  EXPECT_EQ(layers.layers.front().name, "(model) flatten");  // first (the custom loss: its operations' rows)
  const auto dense = std::find_if(layers.layers.begin(), layers.layers.end(), [](const LayerTime& l) { return l.name == "dense"; });
  ASSERT_NE(dense, layers.layers.end());
  EXPECT_GT(dense->forward_ns, 0);
  EXPECT_GT(dense->backward_ns, 0);
  // its own loss.backward(): the nodes found from its forward's outputs, the engine's run not timed
  const auto engine = std::find_if(layers.layers.begin(), layers.layers.end(), [](const LayerTime& l) { return l.name == LayerTimes::kEngine; });
  EXPECT_EQ(engine, layers.layers.end());
  EXPECT_EQ(layers.probe_warmups, 1);  // the 4th step: the first probe's warm-up
  EXPECT_EQ(trainer.measured().stats.measured_steps(), 6 - 2);
  EXPECT_GT(trainer.measured().stats.phase(Phase::forward).mean_ms, 0);
  EXPECT_GT(trainer.measured().stats.phase(Phase::backward).mean_ms, 0);
}

TEST(Trainer, ACallbackErrorEndsTheRunAndTheSinksAreStillFlushed) {
  Trainer trainer{models::Mlp()};
  auto sink = std::make_shared<CollectingSink>();
  LambdaCallback::Hooks hooks;
  hooks.on_train_batch_end = [](int64_t batch, const Logs&) {
    if (batch == 2) throw std::runtime_error("disk full while logging batch 2");
  };
  FitOptions fit;
  fit.callbacks = {std::make_shared<LambdaCallback>(hooks)};
  fit.step_sinks = {sink};
  EXPECT_EQ(message_of([&] { trainer.fit(small_synthetic(), fit); }), "disk full while logging batch 2");
  EXPECT_TRUE(sink->finished);
  EXPECT_EQ(sink->records.size(), 2u);
}

TEST(Trainer, BadOptionsAreRejectedByName) {
  Trainer trainer(torch::nn::Linear(784, 10));
  const auto data = small_synthetic(100);
  FitOptions fit;
  fit.epochs = 0;
  EXPECT_EQ(message_of([&] { trainer.fit(data, fit); }), "epochs must be >= 1, got 0");
  fit = {};
  fit.loader.batch_size = 0;
  EXPECT_EQ(message_of([&] { trainer.fit(data, fit); }), "batch size must be >= 1, got 0");
  fit = {};
  fit.validation_split = 1.0;
  EXPECT_EQ(message_of([&] { trainer.fit(data, fit); }), "validation split must be in [0, 1), got 1.000000");
  fit = {};
  fit.loader.batch_size = 200;
  fit.loader.drop_last = true;
  EXPECT_EQ(message_of([&] { trainer.fit(data, fit); }),
            "a training set of 100 examples gives no batch of 200 with drop_last");
  TrainerOptions bad;
  bad.learning_rate = 0;
  EXPECT_EQ(message_of([&] { Trainer t(models::Mlp(), bad); }), "learning rate must be > 0 and within float's range (<= 3.40282e+38), got 0");
  bad.learning_rate = 1e39;  // finite as a double, infinite as the float weights' step
  EXPECT_EQ(message_of([&] { Trainer t(models::Mlp(), bad); }),
            "learning rate must be > 0 and within float's range (<= 3.40282e+38), got 1e+39");
  bad.learning_rate = 0.1;
  bad.weight_decay = 1e300;
  EXPECT_EQ(message_of([&] { Trainer t(models::Mlp(), bad); }),
            "weight decay must be >= 0 and within float's range (<= 3.40282e+38), got 1e+300");
}

TEST(Trainer, EvaluateAgreesWithTheValidationLogsOfFit) {
  torch::manual_seed(1);
  Trainer trainer{models::Mlp()};
  const auto data = small_synthetic(1000);
  const auto [train, validation] = data.split(0.2);
  FitOptions fit;
  fit.validation_data = std::make_shared<TensorDataset>(validation);
  const History h = trainer.fit(train, fit);
  const Logs logs = trainer.evaluate(validation);
  EXPECT_NEAR(logs.at("loss"), h.last().at("val_loss"), 1e-6);
  EXPECT_DOUBLE_EQ(logs.at("accuracy"), h.last().at("val_accuracy"));
}

TEST(Trainer, MetricsChosenInFitOptionsReplaceTheTrainersAndGetValidationTwins) {
  Trainer trainer{models::Mlp()};
  FitOptions fit;
  fit.metrics = std::vector<MetricSpec>{"precision", "top_3_accuracy"};
  fit.validation_split = 0.25;
  const History h = trainer.fit(small_synthetic(400), fit);
  EXPECT_EQ(h.last().keys(), (std::vector<std::string>{"loss", "precision", "top_3_accuracy", "val_loss",
                                                       "val_precision", "val_top_3_accuracy"}));
  fit.metrics = std::vector<MetricSpec>{"f9"};
  EXPECT_EQ(message_of([&] { trainer.fit(small_synthetic(400), fit); }).rfind("unknown metric 'f9'", 0), 0u);
}

/// A user metric: the mean of the model's largest logit, as a sum and a count that add across ranks.
class MeanTopLogit : public MeanMetric {
 public:
  std::string name() const override { return "mean_top_logit"; }
  void update(const at::Tensor& outputs, const at::Tensor& targets, const at::Tensor&) override {
    accumulate(std::get<0>(outputs.max(1)).sum(), targets.size(0));
  }
};

TEST(Trainer, AUserMetricIsLoggedWithItsValidationTwinAndEvaluated) {
  TrainerOptions options;
  options.metrics = std::vector<MetricSpec>{"accuracy", MetricSpec::of<MeanTopLogit>()};
  Trainer trainer(models::Mlp(), options);
  FitOptions fit;
  fit.validation_split = 0.25;
  fit.epochs = 2;
  const History h = trainer.fit(small_synthetic(400), fit);
  EXPECT_EQ(h.last().keys(), (std::vector<std::string>{"loss", "accuracy", "mean_top_logit", "val_loss", "val_accuracy",
                                                       "val_mean_top_logit"}));
  EXPECT_EQ(h.epochs().size(), 2u);
  EXPECT_NE(h.last().at("mean_top_logit"), 0.0);
  const auto [train, validation] = small_synthetic(400).split(0.25);
  const at::Tensor logits = [&, &validation = validation] {
    torch::NoGradGuard no_grad;
    return trainer.predict(validation.inputs());
  }();
  const Logs evaluated = trainer.evaluate(validation);
  EXPECT_NEAR(evaluated.at("mean_top_logit"), std::get<0>(logits.max(1)).mean().item<double>(), 1e-5);
  EXPECT_NEAR(evaluated.at("mean_top_logit"), h.last().at("val_mean_top_logit"), 1e-5);
}

TEST(Trainer, ARegressionLossGetsNoAccuracyByDefaultAndAskingForItIsNamed) {
  torch::manual_seed(0);
  const at::Tensor x = torch::randn({256, 4});
  const TensorDataset data(x, x.sum(1, /*keepdim=*/true));  // float targets
  TrainerOptions options;
  options.loss = Loss::mean_squared_error;
  Trainer trainer(torch::nn::Linear(4, 1), options);
  const History h = trainer.fit(data);
  EXPECT_EQ(h.last().keys(), (std::vector<std::string>{"loss"}));
  FitOptions fit;
  fit.metrics = std::vector<MetricSpec>{"accuracy"};
  EXPECT_NE(message_of([&] { trainer.fit(data, fit); }).find("need class-index targets (integers), got Float targets"),
            std::string::npos);
  fit.metrics = std::vector<MetricSpec>{"mae"};
  EXPECT_EQ(trainer.fit(data, fit).last().keys(), (std::vector<std::string>{"loss", "mean_absolute_error"}));
}

TEST(Trainer, PredictOfADataSetMatchesItsInputsAndLoadWeightsBringsBackAnotherTrainersModel) {
  torch::manual_seed(0);
  Trainer trained{models::Mlp()};
  auto data = std::make_shared<TensorDataset>(small_synthetic(100));
  FitOptions fit;
  fit.epochs = 1;
  trained.fit(data, fit);
  PredictOptions p;
  p.batch_size = 7;  // a short last batch
  const at::Tensor expected = trained.predict(data->inputs(), p);
  EXPECT_TRUE(trained.predict(data, p).equal(expected));

  const std::string path = (std::filesystem::temp_directory_path() / "fitscope-load-weights.pt").string();
  save_weights(trained.model().named_state(), path);
  torch::manual_seed(1);
  Trainer fresh{models::Mlp()};
  EXPECT_FALSE(fresh.predict(data->inputs(), p).equal(expected));
  fresh.load_weights(path);
  EXPECT_TRUE(fresh.predict(data->inputs(), p).equal(expected));

  Trainer other{models::Mlp(784, 5)};  // another head: refused, naming the file and the tensor
  EXPECT_EQ(message_of([&] { other.load_weights(path); }).rfind("weights file " + path + ": tensor ", 0), 0u);
  EXPECT_NE(message_of([&] { other.load_weights(path); }).find(" has shape [10"), std::string::npos);
  std::filesystem::remove(path);
  EXPECT_EQ(message_of([&] { fresh.load_weights(path); }),
            "weights file " + path + ": no such file (expected torch.save's or fitscope's weights)");
  std::filesystem::create_symlink("/dev/zero", path);  // read whole, it would never end
  EXPECT_EQ(message_of([&] { fresh.load_weights(path); }),
            "weights file " + path + ": not a regular file (expected torch.save's or fitscope's weights)");
  std::filesystem::remove(path);
}

TEST(Trainer, PreprocessingReachesTrainingValidationEvaluateAndPredictAlike) {
  torch::manual_seed(0);
  const TensorDataset data = small_synthetic(400);
  TrainerOptions options;
  options.threads.intra_op = 1;
  options.preprocessing = {std::make_shared<Normalize>(std::vector<double>{0.3}, std::vector<double>{2.0})};
  Trainer trainer(models::Mlp(), options);
  FitOptions fit;
  fit.loader.shuffle = false;
  fit.validation_split = 0.25;
  const History h = trainer.fit(data, fit);
  // the validation examples, evaluated: the logs of the fit's validation, so they saw the same inputs
  const auto validation = split_dataset(std::make_shared<const TensorDataset>(data), 0.25).second;
  const Logs evaluated = trainer.evaluate(validation);
  EXPECT_DOUBLE_EQ(evaluated.at("loss"), h.last().at("val_loss"));
  EXPECT_DOUBLE_EQ(evaluated.at("accuracy"), h.last().at("val_accuracy"));
  // predict normalises too: its outputs are the model's on (x - 0.3) / 2
  const at::Tensor inputs = data.inputs().narrow(0, 0, 50);
  torch::NoGradGuard no_grad;
  const at::Tensor expected = trainer.model().forward((inputs - 0.3) / 2.0);
  EXPECT_TRUE(at::allclose(trainer.predict(inputs), expected, 1e-6, 1e-6));
  EXPECT_TRUE(at::allclose(trainer.predict(std::make_shared<const TensorDataset>(data)).narrow(0, 0, 50), expected, 1e-6, 1e-6));
}

TEST(Trainer, ANormalizeAmongTheTrainingOnlyTransformsIsRefused) {
  Trainer trainer{models::Mlp()};
  FitOptions fit;
  fit.loader.transforms = {std::make_shared<Normalize>(std::vector<double>{0.5}, std::vector<double>{0.25})};
  EXPECT_EQ(message_of([&] { trainer.fit(small_synthetic(64), fit); }),
            "LoaderOptions transforms hold Normalize, but they are augmentation, applied to training batches only: "
            "validation, evaluate and predict would see unnormalised inputs (expected Normalize in TrainerOptions "
            "preprocessing)");
}

TEST(Trainer, AnEmptyMetricsListIsNoMetricsAndTheDefaultFollowsTheLoss) {
  torch::manual_seed(0);
  const TensorDataset data(torch::randn({16, 4}), torch::randint(3, {16}, torch::kLong));
  FitOptions fit;
  fit.loader.workers = 0;
  TrainerOptions none;
  none.metrics = {};  // as Keras's metrics=[]
  Trainer bare(torch::nn::Linear(4, 3), none);
  EXPECT_EQ(bare.fit(data, fit).last().keys(), (std::vector<std::string>{"loss"}));
  Trainer following(torch::nn::Linear(4, 3));  // cross-entropy: accuracy
  EXPECT_EQ(following.fit(data, fit).last().keys(), (std::vector<std::string>{"loss", "accuracy"}));
}
