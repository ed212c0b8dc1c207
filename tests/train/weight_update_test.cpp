// What happens between backward and the next batch: gradient accumulation (TrainerOptions::accumulate)
// and clipping (TrainerOptions::clipping), checked against the same updates written out by hand.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>
#include <torch/utils.h>

#include <cmath>

#include "fitscope/data/sources/synthetic.hpp"
#include "fitscope/train/trainer.hpp"

using namespace fitscope;

namespace {

TensorDataset examples(int64_t size) {
  SyntheticOptions o;
  o.size = size;
  return make_synthetic(o);
}

/// A linear classifier, initialised from `seed`.
torch::nn::Sequential linear(uint64_t seed) {
  torch::manual_seed(seed);
  return torch::nn::Sequential(torch::nn::Flatten(), torch::nn::Linear(784, 10));
}

at::Tensor flat_weights(Model& model) {
  std::vector<at::Tensor> flat;
  for (const at::Tensor& p : model.parameters()) flat.push_back(p.detach().flatten());
  return at::cat(flat);
}

TrainerOptions sgd(double lr) {
  TrainerOptions o;
  o.optimizer = OptimizerKind::sgd;
  o.learning_rate = lr;
  o.warmup_steps = 0;
  o.threads.intra_op = 1;
  return o;
}

/// Trains a fresh linear(7) on `data` for `steps` batches of `batch`; the weights after.
at::Tensor trained(const TensorDataset& data, TrainerOptions options, int64_t batch, int64_t steps, bool shuffle = true,
                   std::vector<std::shared_ptr<Callback>> callbacks = {}) {
  Trainer trainer(linear(7), std::move(options));
  FitOptions fit;
  fit.loader.batch_size = batch;
  fit.loader.shuffle = shuffle;
  fit.steps_per_epoch = steps;
  fit.callbacks = std::move(callbacks);
  trainer.fit(data, fit);
  return flat_weights(trainer.model());
}

/// Plain SGD by hand on linear(7): one update per group of examples [begin, end), from their mean loss.
at::Tensor by_hand(const TensorDataset& data, double lr, const std::vector<std::pair<int64_t, int64_t>>& groups) {
  torch::nn::Sequential model = linear(7);
  for (const auto& [begin, end] : groups) {
    const at::Tensor x = data.inputs().slice(0, begin, end), y = data.targets().slice(0, begin, end);
    for (auto& p : model->parameters()) p.mutable_grad() = at::Tensor();
    at::cross_entropy_loss(model->forward(x), y).backward();
    torch::NoGradGuard no_grad;
    for (auto& p : model->parameters()) p.sub_(lr * p.grad());
  }
  std::vector<at::Tensor> flat;
  for (const auto& p : model->parameters()) flat.push_back(p.detach().flatten());
  return at::cat(flat);
}

/// Records what the batch hooks see of the updates.
class UpdateProbe : public Callback {
 public:
  std::vector<std::optional<double>> norms, logged;
  void on_train_batch_end(int64_t, Logs& logs) override {
    norms.push_back(context().grad_norm());
    logged.push_back(logs.contains("grad_norm") ? std::optional<double>(logs.at("grad_norm")) : std::nullopt);
  }
};

}  // namespace

TEST(Accumulation, FourBatchesOfEightUpdateTheWeightsAsOneBatchOfThirtyTwo) {
  const TensorDataset data = examples(32);
  const at::Tensor one_batch = trained(data, sgd(0.5), 32, 1);
  TrainerOptions accumulating = sgd(0.5);
  accumulating.accumulate = 4;
  const at::Tensor four_batches = trained(data, accumulating, 8, 4);
  EXPECT_TRUE(at::allclose(one_batch, four_batches, 1e-5, 1e-6)) << (one_batch - four_batches).abs().max();
  EXPECT_TRUE(at::allclose(one_batch, by_hand(data, 0.5, {{0, 32}}), 1e-5, 1e-6));
  // without it, the same four batches make four updates: a different point
  EXPECT_FALSE(at::allclose(one_batch, trained(data, sgd(0.5), 8, 4), 1e-3, 1e-4));
}

TEST(Accumulation, TheEpochsShortLastGroupUpdatesFromTheMeanOfItsOwnBatches) {
  const TensorDataset data = examples(24);
  TrainerOptions o = sgd(0.5);
  o.accumulate = 2;
  // three batches of 8 in order: batches 0 and 1 make one update, batch 2 alone the next (not halved)
  const at::Tensor fitted = trained(data, o, 8, 3, /*shuffle=*/false);
  EXPECT_TRUE(at::allclose(fitted, by_hand(data, 0.5, {{0, 16}, {16, 24}}), 1e-5, 1e-6))
      << (fitted - by_hand(data, 0.5, {{0, 16}, {16, 24}})).abs().max();
}

TEST(Clipping, ByNormScalesEveryGradientAndByValueClampsEachElement) {
  at::Tensor a = at::zeros({2}), b = at::zeros({1});
  a.mutable_grad() = at::tensor({3.0f, 0.0f});
  b.mutable_grad() = at::tensor({4.0f});
  EXPECT_NEAR(clip_gradients({a, b}, {1.0, 0}), 5.0, 1e-5);
  EXPECT_NEAR(a.grad()[0].item<double>(), 0.6, 1e-5);
  EXPECT_NEAR(b.grad()[0].item<double>(), 0.8, 1e-5);
  EXPECT_NEAR(clip_gradients({a, b}, {10.0, 0}), 1.0, 1e-5);  // within the norm: unchanged
  EXPECT_NEAR(b.grad()[0].item<double>(), 0.8, 1e-5);

  at::Tensor c = at::zeros({3});
  c.mutable_grad() = at::tensor({-3.0f, 0.5f, 2.0f});
  EXPECT_NEAR(clip_gradients({c, at::zeros({1})}, {0, 1.0}), std::sqrt(9 + 0.25 + 4), 1e-5);  // no grad: skipped
  EXPECT_TRUE(at::equal(c.grad(), at::tensor({-1.0f, 0.5f, 1.0f})));

  EXPECT_THROW((GradientClipping{1, 1}.validate()), std::invalid_argument);
  EXPECT_THROW((GradientClipping{-1, 0}.validate()), std::invalid_argument);
  EXPECT_THROW((GradientClipping{0, NAN}.validate()), std::invalid_argument);
  TrainerOptions both;
  both.clipping = {1, 1};
  EXPECT_THROW(Trainer(linear(1), both), std::invalid_argument);
  TrainerOptions none;
  none.accumulate = 0;
  EXPECT_THROW(Trainer(linear(1), none), std::invalid_argument);
}

TEST(Clipping, BoundsEachUpdateAndTellsTheHooksTheNormBeforeIt) {
  const TensorDataset data = examples(64);
  const at::Tensor start = flat_weights(*make_model(linear(7)));
  TrainerOptions o = sgd(1.0);
  o.clipping.max_norm = 1e-3;
  auto probe = std::make_shared<UpdateProbe>();
  const at::Tensor clipped = trained(data, o, 32, 1, true, {probe});
  // SGD moves by lr * gradient: at most 1e-3 after clipping
  EXPECT_LE((clipped - start).norm().item<double>(), 1e-3 * (1 + 1e-4));
  ASSERT_EQ(probe->norms.size(), 1u);
  ASSERT_TRUE(probe->norms[0].has_value());
  EXPECT_GT(*probe->norms[0], 1e-2);  // the norm before clipping, far above the bound
  EXPECT_EQ(probe->logged[0], probe->norms[0]);
  // unclipped, the same step moves much further, and there is no norm to tell
  auto unclipped_probe = std::make_shared<UpdateProbe>();
  const at::Tensor unclipped = trained(data, sgd(1.0), 32, 1, true, {unclipped_probe});
  EXPECT_GT((unclipped - start).norm().item<double>(), 1e-2);
  EXPECT_FALSE(unclipped_probe->norms[0].has_value());
  EXPECT_FALSE(unclipped_probe->logged[0].has_value());
  // with accumulation, only the batches that update the weights have a norm
  o.accumulate = 2;
  auto accumulating = std::make_shared<UpdateProbe>();
  trained(data, o, 16, 4, true, {accumulating});
  ASSERT_EQ(accumulating->logged.size(), 4u);
  EXPECT_FALSE(accumulating->logged[0].has_value());
  EXPECT_TRUE(accumulating->logged[1].has_value());
  EXPECT_FALSE(accumulating->logged[2].has_value());
  EXPECT_TRUE(accumulating->logged[3].has_value());
}

namespace {

/// Takes the trainer's state after global step `at` (as BackupAndRestore does, through the fit).
class StateAt : public Callback {
 public:
  explicit StateAt(int64_t at) : at_(at) {}
  TrainingState state;
  void on_train_batch_end(int64_t, Logs&) override {
    if (context().global_step() != at_) return;
    context().request_checkpoint([this](int64_t epoch, int64_t batch) { context().capture_state(state, epoch, batch); });
  }

 private:
  int64_t at_;
};

FitOptions two_epochs_of_six() {
  FitOptions fit;
  fit.epochs = 2;
  fit.loader.batch_size = 16;
  fit.loader.workers = 0;
  return fit;
}

}  // namespace

TEST(Optimizers, EachIsBuiltWithItsSettingsAndResumesFromACheckpointWithTheUninterruptedWeights) {
  const TensorDataset data = examples(96);  // six batches of 16 an epoch
  for (const std::string& name : {"adam", "adamw", "sgd"}) {
    TrainerOptions o = sgd(0.05);
    o.optimizer = parse_optimizer(name);
    if (name == "sgd") {
      o.momentum = 0.9;
      o.nesterov = true;
      o.weight_decay = 1e-3;
    }
    Trainer whole(linear(7), o);
    auto state = std::make_shared<StateAt>(4);
    FitOptions fit = two_epochs_of_six();
    fit.callbacks = {state};
    whole.fit(data, fit);
    ASSERT_EQ(state->state.optimizer_kind, name);
    // the optimizer's settings as libtorch holds them
    const auto& group = whole.optimizer().param_groups().front().options();
    if (name == "adamw") {
      EXPECT_EQ(static_cast<const torch::optim::AdamWOptions&>(group).weight_decay(), 1e-2);  // PyTorch's default
    } else if (name == "sgd") {
      const auto& s = static_cast<const torch::optim::SGDOptions&>(group);
      EXPECT_EQ(s.momentum(), 0.9);
      EXPECT_TRUE(s.nesterov());
      EXPECT_EQ(s.weight_decay(), 1e-3);
    }
    Trainer resumed(linear(99), o);  // other initial weights: the state replaces them
    resumed.context().restore(state->state);
    resumed.fit(data, two_epochs_of_six());
    EXPECT_TRUE(at::equal(flat_weights(whole.model()), flat_weights(resumed.model()))) << name;
    // a state of another optimizer is refused, naming both
    TrainerOptions other = o;
    other.optimizer = name == "adamw" ? OptimizerKind::adam : OptimizerKind::adamw;
    other.momentum = 0;
    other.nesterov = false;
    Trainer mismatched(linear(7), other);
    EXPECT_THROW(mismatched.context().restore(state->state), std::invalid_argument) << name;
  }
}

TEST(Optimizers, SettingsThatDoNotApplyAreRefusedByName) {
  const auto message = [](TrainerOptions o) {
    try {
      Trainer t(linear(1), o);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  TrainerOptions o;
  o.momentum = 0.9;  // Adam
  EXPECT_EQ(message(o), "TrainerOptions::momentum and TrainerOptions::nesterov apply to optimizer sgd only, got adam");
  o.optimizer = OptimizerKind::sgd;
  o.momentum = 1;
  EXPECT_EQ(message(o), "momentum must be in [0, 1), got 1.000000");
  o.momentum = 0;
  o.nesterov = true;
  EXPECT_EQ(message(o), "nesterov needs a momentum > 0, got 0");
  o.nesterov = false;
  o.weight_decay = -1;
  EXPECT_EQ(message(o), "weight decay must be >= 0 and within float's range (<= 3.40282e+38), got -1");
  EXPECT_THROW(parse_optimizer("rmsprop"), std::invalid_argument);
}

TEST(RunLength, MaxStepsAndMaxTimeStopAtABatchEndAndTheEpochStillEnds) {
  const TensorDataset data = examples(64);  // 4 batches of 16 an epoch
  FitOptions fit;
  fit.epochs = 5;
  fit.loader.batch_size = 16;
  fit.max_steps = 6;
  Trainer trainer(linear(7), sgd(0.01));
  const History stopped = trainer.fit(data, fit);
  EXPECT_EQ(trainer.context().global_step(), 6);
  EXPECT_EQ(stopped.epochs(), (std::vector<int64_t>{0, 1}));  // the second epoch ended after 2 batches
  fit.max_steps.reset();
  fit.max_time_s = 1e-9;  // past at the first batch end
  Trainer timed(linear(7), sgd(0.01));
  EXPECT_EQ(timed.fit(data, fit).epochs().size(), 1u);
  EXPECT_EQ(timed.context().global_step(), 1);
  EXPECT_EQ(timed.measured().callbacks.front().name, "TimeLimit");  // its cost is counted like any callback's
  fit.max_time_s = -1;
  EXPECT_THROW(timed.fit(data, fit), std::invalid_argument);
}

TEST(RunLength, ValidationRunsEveryNthEpochOnly) {
  const TensorDataset data = examples(80);
  FitOptions fit;
  fit.epochs = 4;
  fit.loader.batch_size = 16;
  fit.validation_split = 0.2;
  fit.validation_freq = 2;
  Trainer trainer(linear(7), sgd(0.01));
  const History history = trainer.fit(data, fit);
  EXPECT_EQ(history.at("loss").size(), 4u);
  const std::vector<double> val_loss = history.at("val_loss");
  ASSERT_EQ(val_loss.size(), 2u);  // as Keras: the validated epochs' values only, no NaN between them
  EXPECT_FALSE(std::isnan(val_loss[0]));
  EXPECT_FALSE(std::isnan(val_loss[1]));
  fit.validation_freq = 0;
  EXPECT_THROW(trainer.fit(data, fit), std::invalid_argument);
}
