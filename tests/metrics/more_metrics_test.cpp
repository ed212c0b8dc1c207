#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "fitscope/metrics/accuracy.hpp"
#include "fitscope/metrics/auc.hpp"
#include "fitscope/metrics/confusion_metrics.hpp"
#include "fitscope/metrics/mean_error.hpp"
#include "fitscope/metrics/metric_set.hpp"
#include "fitscope/metrics/top_k_accuracy.hpp"

using namespace fitscope;

namespace {

double value_of(const std::string& name, const at::Tensor& outputs, const at::Tensor& targets) {
  auto metric = make_metric(name);
  metric->update(outputs, targets, at::scalar_tensor(0.0));
  return metric->result();
}

at::Tensor longs(std::vector<int64_t> v) { return at::tensor(v, at::kLong); }
at::Tensor floats(std::vector<float> v) { return at::tensor(v, at::kFloat); }

}  // namespace

TEST(ConfusionMetric, BinaryPrecisionRecallAndF1ByHand) {
  const auto outputs = floats({0.9f, 0.8f, 0.2f, 0.7f, 0.1f}).view({5, 1});  // predicted 1 1 0 1 0
  const auto targets = longs({1, 0, 1, 1, 0});                               // tp 2, fp 1, fn 1
  EXPECT_DOUBLE_EQ(value_of("precision", outputs, targets), 2.0 / 3);
  EXPECT_DOUBLE_EQ(value_of("recall", outputs, targets), 2.0 / 3);
  EXPECT_DOUBLE_EQ(value_of("f1", outputs, targets), 2.0 / 3);
}

TEST(ConfusionMetric, NoPositivePredictionGivesZeroPrecisionAndSaysSo) {
  ConfusionMetric precision(ConfusionScore::precision, Average::automatic, "precision");
  precision.update(floats({0.1f, 0.2f, 0.3f}).view({3, 1}), longs({1, 0, 1}), at::Tensor());
  EXPECT_EQ(precision.result(), 0.0);
  ASSERT_TRUE(precision.undefined().has_value());
  EXPECT_NE(precision.undefined()->find("precision divides by zero"), std::string::npos);
  ConfusionMetric recall(ConfusionScore::recall, Average::automatic, "recall");
  recall.update(floats({0.1f, 0.2f, 0.3f}).view({3, 1}), longs({1, 0, 1}), at::Tensor());
  EXPECT_EQ(recall.result(), 0.0);
  EXPECT_FALSE(recall.undefined().has_value());  // two positive examples: defined, just 0
}

TEST(ConfusionMetric, MacroAndMicroAveragesOverClassesByHand) {
  // predicted 0 1 2 2, targets 0 1 1 2
  const auto outputs = floats({9, 0, 0, 0, 9, 0, 0, 0, 9, 0, 0, 9}).view({4, 3});
  const auto targets = longs({0, 1, 1, 2});
  EXPECT_NEAR(value_of("precision", outputs, targets), (1 + 1 + 0.5) / 3, 1e-12);
  EXPECT_NEAR(value_of("recall_macro", outputs, targets), (1 + 0.5 + 1) / 3, 1e-12);
  EXPECT_NEAR(value_of("f1", outputs, targets), (1 + 2.0 / 3 + 2.0 / 3) / 3, 1e-12);
  EXPECT_DOUBLE_EQ(value_of("precision_micro", outputs, targets), 0.75);
  EXPECT_DOUBLE_EQ(value_of("f1_micro", outputs, targets), 0.75);
}

TEST(ConfusionMetric, AnEmptyClassCountsAsZeroInTheMacroAverage) {
  ConfusionMetric precision(ConfusionScore::precision, Average::macro, "precision");
  // 4 classes, class 3 never predicted nor present
  precision.update(floats({9, 0, 0, 0, 0, 9, 0, 0, 0, 0, 9, 0}).view({3, 4}), longs({0, 1, 2}), at::Tensor());
  EXPECT_DOUBLE_EQ(precision.result(), 3.0 / 4);
  EXPECT_TRUE(precision.undefined().has_value());
}

TEST(TopKAccuracy, CountsTargetsAmongTheKLargestOutputs) {
  TopKAccuracy top2(2);
  top2.update(floats({0.1f, 0.5f, 0.4f, 0.6f, 0.3f, 0.1f}).view({2, 3}), longs({2, 2}), at::Tensor());
  EXPECT_EQ(top2.name(), "top_2_accuracy");
  EXPECT_DOUBLE_EQ(top2.result(), 0.5);
  EXPECT_EQ(make_metric("top_k_accuracy")->name(), "top_k_accuracy");
  EXPECT_THROW(TopKAccuracy(0), std::invalid_argument);
}

TEST(MeanError, SquaredAndAbsoluteErrorsByHand) {
  const auto outputs = floats({1, 2, 3}).view({3, 1});
  const auto targets = floats({1, 0, 5});
  EXPECT_NEAR(value_of("mse", outputs, targets), 8.0 / 3, 1e-12);
  EXPECT_NEAR(value_of("mean_absolute_error", outputs, targets), 4.0 / 3, 1e-12);
}

TEST(Auc, PerfectSeparationTiesAndAKnownOrderingByHand) {
  EXPECT_DOUBLE_EQ(value_of("auc", floats({0.9f, 0.8f, 0.1f, 0.2f}).view({4, 1}), longs({1, 1, 0, 0})), 1.0);
  EXPECT_DOUBLE_EQ(value_of("auc", floats({0.5f, 0.5f, 0.5f, 0.5f}).view({4, 1}), longs({1, 0, 1, 0})), 0.5);
  // positives 0.8, 0.4; negatives 0.6, 0.2: 3 of the 4 pairs ordered right
  EXPECT_DOUBLE_EQ(value_of("auc", floats({0.8f, 0.4f, 0.6f, 0.2f}).view({4, 1}), longs({1, 1, 0, 0})), 0.75);
}

TEST(Auc, AClassWithoutPositivesIsUndefinedAndCountsAsZero) {
  Auc auc;
  auc.update(floats({0.3f, 0.7f}).view({2, 1}), longs({0, 0}), at::Tensor());
  EXPECT_EQ(auc.result(), 0.0);
  EXPECT_TRUE(auc.undefined().has_value());
}

TEST(Metric, ForEveryMetricSummedShardStatesGiveTheMetricOfTheUnion) {
  at::manual_seed(7);
  const auto logits = at::randn({40, 4});
  const auto labels = at::randint(4, {40}, at::kLong);
  const auto probs = at::rand({40, 1});
  const auto binary = at::randint(2, {40}, at::kLong);
  struct Case {
    std::string name;
    at::Tensor outputs, targets;
  };
  const std::vector<Case> cases = {
      {"accuracy", logits, labels},          {"top_2_accuracy", logits, labels}, {"precision", logits, labels},
      {"recall_macro", logits, labels},      {"f1", logits, labels},             {"precision_micro", logits, labels},
      {"precision", probs, binary},          {"recall", probs, binary},          {"f1_binary", probs, binary},
      {"auc", logits, labels},               {"auc", probs, binary},             {"mse", probs, binary},
      {"mae", probs, binary},                {"loss", logits, labels}};
  for (const auto& c : cases) {
    auto a = make_metric(c.name), b = make_metric(c.name), all = make_metric(c.name), reduced = make_metric(c.name);
    const auto loss_a = at::scalar_tensor(0.7), loss_b = at::scalar_tensor(0.2);
    a->update(c.outputs.narrow(0, 0, 13), c.targets.narrow(0, 0, 13), loss_a);
    b->update(c.outputs.narrow(0, 13, 27), c.targets.narrow(0, 13, 27), loss_b);
    all->update(c.outputs.narrow(0, 0, 13), c.targets.narrow(0, 0, 13), loss_a);
    all->update(c.outputs.narrow(0, 13, 27), c.targets.narrow(0, 13, 27), loss_b);
    const auto sa = a->state(), sb = b->state();
    std::vector<at::Tensor> sum;
    for (std::size_t i = 0; i < sa.size(); ++i) sum.push_back(sa[i] + sb[i]);
    reduced->load_state(sum);
    EXPECT_NEAR(reduced->result(), all->result(), 1e-9) << c.name;
  }
}

TEST(Metric, TheMeanOfTwoShardPrecisionsIsNotThePrecisionOfTheUnion) {
  auto a = make_metric("precision"), b = make_metric("precision"), sum = make_metric("precision");
  a->update(floats({0.9f}).view({1, 1}), longs({1}), at::Tensor());                         // 1/1
  b->update(floats({0.9f, 0.9f, 0.9f}).view({3, 1}), longs({1, 0, 0}), at::Tensor());      // 1/3
  sum->load_state({a->state()[0] + b->state()[0]});
  EXPECT_DOUBLE_EQ(sum->result(), 0.5);
  EXPECT_NE((a->result() + b->result()) / 2, sum->result());
}

TEST(MetricSet, FeedingInGroupsGivesTheSameLogsAsFeedingEveryBatch) {
  at::manual_seed(3);
  MetricSet grouped({"accuracy", "precision", "recall", "auc", "top_2_accuracy"}, 4);
  MetricSet single({"accuracy", "precision", "recall", "auc", "top_2_accuracy"}, 1);
  for (int b = 0; b < 11; ++b) {
    const int64_t n = b == 10 ? 3 : 8;  // a last, smaller batch
    const auto outputs = at::randn({n, 3});
    const auto targets = at::randint(3, {n}, at::kLong);
    const auto loss = at::rand({});
    grouped.update(outputs, targets, loss);
    single.update(outputs, targets, loss);
  }
  const Logs a = grouped.logs(), b = single.logs();
  ASSERT_EQ(a.keys(), (std::vector<std::string>{"loss", "accuracy", "precision", "recall", "auc", "top_2_accuracy"}));
  for (const auto& key : a.keys()) EXPECT_NEAR(a.at(key), b.at(key), 1e-9) << key;
}

namespace {
/// Counts the updates the metrics of every MetricSet received (a test's own metric).
struct CountsUpdates : Metric {
  static inline int updates = 0;
  std::string name() const override { return "updates"; }
  void update(const at::Tensor&, const at::Tensor&, const at::Tensor&) override { ++updates; }
  double result() const override { return updates; }
  void reset() override {}
  std::vector<at::Tensor> state() const override { return {}; }
  void load_state(const std::vector<at::Tensor>&) override {}
};
}  // namespace

/// Small outputs are fed to the metrics sixteen batches at a time; outputs of a megabyte (a
/// segmentation's) batch by batch, so a group never keeps more than kMaxPendingBytes alive.
TEST(MetricSet, AGroupEndsWhenItsOutputsReachTheByteBudget) {
  MetricSet set({MetricSpec::of<CountsUpdates>()}, 16);
  CountsUpdates::updates = 0;
  for (int b = 0; b < 32; ++b) set.update(at::zeros({8, 3}), at::zeros({8}, at::kLong), at::scalar_tensor(0.5));
  EXPECT_EQ(CountsUpdates::updates, 2);
  const int64_t columns = MetricSet::kMaxPendingBytes / 8 / 4;  // 8 rows of floats: the budget at once
  for (int b = 0; b < 3; ++b) set.update(at::zeros({8, columns}), at::zeros({8}, at::kLong), at::scalar_tensor(0.5));
  EXPECT_EQ(CountsUpdates::updates, 5);
  EXPECT_DOUBLE_EQ(set.logs().at("loss"), 0.5);
}

TEST(MetricSet, WarnsOnceAboutAnUndefinedMetric) {
  MetricSet set({"precision"});
  std::vector<std::string> warnings;
  auto warn = [&warnings](const std::string& w) { warnings.push_back(w); };
  for (int epoch = 0; epoch < 3; ++epoch) {
    set.update(floats({0.1f, 0.2f}).view({2, 1}), longs({1, 0}), at::scalar_tensor(0.3));  // never positive
    set.warn_undefined(warn, "val_");
  }
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].rfind("val_precision divides by zero", 0), 0u) << warnings[0];
}

TEST(Accuracy, KeepsTwoNumbersOfStateHoweverManyClassesAndAgreesWithTheHandCount) {
  at::Tensor outputs = at::zeros({4, 20000});
  outputs.index_put_({0, 7}, 1.0);      // predicted 7, target 7
  outputs.index_put_({1, 19999}, 1.0);  // predicted 19999, target 19999
  outputs.index_put_({2, 3}, 1.0);      // predicted 3, target 4
  const auto targets = longs({7, 19999, 4, 0});  // the last predicts 0 (all equal): right
  auto metric = make_metric("accuracy");
  metric->update(outputs, targets, at::scalar_tensor(0.0));
  EXPECT_DOUBLE_EQ(metric->result(), 3.0 / 4);
  int64_t elements = 0;
  for (const at::Tensor& t : metric->state()) elements += t.numel();
  EXPECT_EQ(elements, 2);
  // binary: one output column, the positive class above 0.5
  EXPECT_DOUBLE_EQ(value_of("accuracy", floats({0.9f, 0.2f, 0.7f}).view({3, 1}), longs({1, 1, 1})), 2.0 / 3);
}

TEST(ConfusionMetric, RefusesAMatrixBeyondItsBoundAndNamesTheCheaperMetrics) {
  auto metric = make_metric("precision");
  try {
    metric->update(at::zeros({2, 5000}), longs({0, 1}), at::scalar_tensor(0.0));
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "precision, recall and f1 keep a 5000 x 5000 confusion matrix of int64 (190 MiB per copy), but "
                           "at most 4096 classes are allowed: use accuracy or top_<k>_accuracy, whose state is two numbers");
  }
}
