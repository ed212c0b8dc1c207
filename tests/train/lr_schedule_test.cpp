// Learning-rate schedules: their shapes, and the trainer applying them per step and per epoch.
#include <gtest/gtest.h>

#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/utils.h>

#include "fitscope/data/sources/synthetic.hpp"
#include "fitscope/train/lr_schedule.hpp"
#include "fitscope/train/trainer.hpp"

using namespace fitscope;

TEST(LrSchedule, StepAndExponentialDecayMultiplyByTheFactorPerInterval) {
  const LrSchedule step = step_decay(0.1, 10, 0.5);
  EXPECT_DOUBLE_EQ(step.rate(0, 100), 0.1);
  EXPECT_DOUBLE_EQ(step.rate(9, 100), 0.1);
  EXPECT_DOUBLE_EQ(step.rate(10, 100), 0.05);
  EXPECT_DOUBLE_EQ(step.rate(25, 100), 0.025);
  const LrSchedule smooth = exponential_decay(0.1, 10, 0.25);
  EXPECT_DOUBLE_EQ(smooth.rate(5, 100), 0.05);  // half an interval: sqrt(0.25)
  EXPECT_DOUBLE_EQ(smooth.rate(20, 100), 0.1 * 0.25 * 0.25);
  EXPECT_THROW(step_decay(0.1, 0, 0.5), std::invalid_argument);
  EXPECT_THROW(exponential_decay(-1, 10, 0.5), std::invalid_argument);
}

TEST(LrSchedule, CosineRisesLinearlyThroughItsWarmupThenFallsToZeroAtTheEnd) {
  const LrSchedule cosine = cosine_with_warmup(1.0, 4);  // warm-up steps 0..3, then 10 steps of cosine
  EXPECT_DOUBLE_EQ(cosine.rate(0, 14), 0.2);
  EXPECT_DOUBLE_EQ(cosine.rate(3, 14), 0.8);
  EXPECT_DOUBLE_EQ(cosine.rate(4, 14), 1.0);
  EXPECT_NEAR(cosine.rate(9, 14), 0.5, 1e-12);
  EXPECT_NEAR(cosine.rate(14, 14), 0.0, 1e-12);
  EXPECT_NEAR(cosine.rate(50, 14), 0.0, 1e-12);  // past the end: stays at the floor
  EXPECT_NEAR(cosine_with_warmup(1.0, 0, 10, 0.1).rate(10, 10), 0.1, 1e-12);
}

TEST(LrSchedule, OneCycleRisesFromATwentyFifthToThePeakThenFallsFarBelowTheStart) {
  const LrSchedule cycle = one_cycle(1.0);
  EXPECT_NEAR(cycle.rate(0, 100), 1.0 / 25, 1e-12);
  EXPECT_NEAR(cycle.rate(30, 100), 1.0, 1e-12);
  EXPECT_NEAR(cycle.rate(100, 100), 1.0 / 25 / 1e4, 1e-12);
  EXPECT_LT(cycle.rate(65, 100), 1.0);
  EXPECT_GT(cycle.rate(65, 100), cycle.rate(90, 100));
  EXPECT_THROW(make_lr_schedule("cyclic", 0.1, 1, 0.5, 0, LrSchedule::Unit::step), std::invalid_argument);
}

namespace {

/// The rate each batch's hooks see.
class RateProbe : public Callback {
 public:
  std::vector<double> rates;
  void on_train_batch_begin(int64_t, Logs&) override { rates.push_back(context().learning_rate()); }
};

}  // namespace

TEST(LrSchedule, TheTrainerAppliesItBeforeEachBatchOrEachEpochAndLogsTheRate) {
  SyntheticOptions data_options;
  data_options.size = 64;
  const TensorDataset data = make_synthetic(data_options);
  TrainerOptions o;
  o.threads.intra_op = 1;
  o.lr_schedule = cosine_with_warmup(0.01, 2);  // the fit's length: 2 epochs x 4 batches
  torch::manual_seed(1);
  Trainer trainer(torch::nn::Sequential(torch::nn::Flatten(), torch::nn::Linear(784, 10)), o);
  auto probe = std::make_shared<RateProbe>();
  FitOptions fit;
  fit.epochs = 2;
  fit.loader.batch_size = 16;
  fit.callbacks = {probe};
  const History history = trainer.fit(data, fit);
  ASSERT_EQ(probe->rates.size(), 8u);
  for (int64_t step = 0; step < 8; ++step) EXPECT_DOUBLE_EQ(probe->rates[step], o.lr_schedule.rate(step, 8)) << step;
  EXPECT_DOUBLE_EQ(history.last().at("learning_rate"), o.lr_schedule.rate(7, 8));

  o.lr_schedule = step_decay(0.01, 1, 0.5, LrSchedule::Unit::epoch);
  Trainer per_epoch(torch::nn::Sequential(torch::nn::Flatten(), torch::nn::Linear(784, 10)), o);
  fit.epochs = 3;
  fit.callbacks = {};
  const History epochs = per_epoch.fit(data, fit);
  ASSERT_EQ(epochs.epochs().size(), 3u);
  EXPECT_EQ(epochs.at("learning_rate"), (std::vector<double>{0.01, 0.005, 0.0025}));
}
