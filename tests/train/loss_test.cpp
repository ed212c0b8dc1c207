// The built-in losses against the same formulas written out by hand.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cmath>

#include "fitscope/train/loss.hpp"

using namespace fitscope;

namespace {
double value(const at::Tensor& t) { return t.item<double>(); }
/// A rows x cols double tensor of `values`, row by row.
at::Tensor matrix(std::vector<double> values, int64_t rows, int64_t cols) {
  return at::tensor(values, at::kDouble).view({rows, cols});
}
at::Tensor classes(std::vector<int64_t> indices) { return at::tensor(indices, at::kLong); }
}  // namespace

TEST(Loss, LabelSmoothingSpreadsTheTargetOverTheClasses) {
  const at::Tensor logits = matrix({2.0, -1.0, 0.5}, 1, 3), target = classes({0});
  const at::Tensor logp = at::log_softmax(logits, 1)[0];
  LossOptions o;
  o.label_smoothing = 0.3;  // 0.8 on the class, 0.1 on each other one
  const double expected = -(0.8 * value(logp[0]) + 0.1 * value(logp[1]) + 0.1 * value(logp[2]));
  EXPECT_NEAR(value(compute_loss(Loss::cross_entropy, logits, target, o)), expected, 1e-12);
  EXPECT_NEAR(value(compute_loss(Loss::cross_entropy, logits, target)), -value(logp[0]), 1e-12);
}

TEST(Loss, ClassWeightsScaleEachExampleAndAverageOverTheBatchAsKerasDoes) {
  const at::Tensor logits = matrix({1.0, 0.0, 0.0, 2.0}, 2, 2), targets = classes({0, 1});
  const at::Tensor logp = at::log_softmax(logits, 1);
  const double l0 = -value(logp[0][0]), l1 = -value(logp[1][1]);
  LossOptions o;
  o.class_weights = {1, 3};
  // Keras: (1 * l0 + 3 * l1) / 2 (PyTorch's weight= would divide by the weights' sum, 4)
  EXPECT_NEAR(value(compute_loss(Loss::cross_entropy, logits, targets, o)), (l0 + 3 * l1) / 2, 1e-12);
  o.class_weights = {1, 1, 1};
  try {
    compute_loss(Loss::cross_entropy, logits, targets, o);
    FAIL() << "three weights for two classes were accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "class weights: 3 given, the model outputs 2 classes");
  }
}

TEST(Loss, ElementWiseLossesCompareTheOutputsWithTargetsOfTheirShape) {
  const at::Tensor outputs = matrix({0.5, 3.0}, 2, 1), targets = at::tensor(std::vector<double>{1.0, 0.0}, at::kDouble);
  EXPECT_NEAR(value(compute_loss(Loss::mean_absolute_error, outputs, targets)), (0.5 + 3.0) / 2, 1e-12);
  EXPECT_NEAR(value(compute_loss(Loss::mean_squared_error, outputs, targets)), (0.25 + 9.0) / 2, 1e-12);
  // Huber, delta 1: 0.5 * 0.5^2 below it, 1 * (3 - 0.5) above
  EXPECT_NEAR(value(compute_loss(Loss::huber, outputs, targets)), (0.125 + 2.5) / 2, 1e-12);
  LossOptions wide;
  wide.huber_delta = 4;  // both below: half the squared error
  EXPECT_NEAR(value(compute_loss(Loss::huber, outputs, targets, wide)), (0.125 + 4.5) / 2, 1e-12);
  // sigmoid cross-entropy of logit 0 against 1 is log 2; of logit 3 against 0 is log(1 + e^3)
  EXPECT_NEAR(value(compute_loss(Loss::binary_cross_entropy_with_logits, outputs.new_zeros({1, 1}), classes({1}))),
              std::log(2.0), 1e-12);
  // class indices against several outputs are one-hot vectors
  const at::Tensor three = matrix({0.0, 1.0, 0.5}, 1, 3);
  EXPECT_NEAR(value(compute_loss(Loss::mean_squared_error, three, classes({2}))), (0 + 1 + 0.25) / 3, 1e-12);
  EXPECT_THROW(compute_loss(Loss::mean_squared_error, three, matrix({1.0, 2.0}, 1, 2)), std::invalid_argument);
}

TEST(Loss, NamesParseBothWaysAndOptionsThatDoNotApplyAreRefused) {
  for (Loss l : {Loss::cross_entropy, Loss::mean_squared_error, Loss::mean_absolute_error, Loss::huber,
                 Loss::binary_cross_entropy_with_logits}) {
    EXPECT_EQ(parse_loss(loss_name(l)), l);
  }
  EXPECT_EQ(parse_loss("cross_entropy"), Loss::cross_entropy);
  EXPECT_EQ(parse_loss("mean_squared_error"), Loss::mean_squared_error);
  EXPECT_THROW(parse_loss("hinge"), std::invalid_argument);
  LossOptions o;
  o.label_smoothing = 0.1;
  EXPECT_NO_THROW(o.validate(Loss::cross_entropy));
  EXPECT_THROW(o.validate(Loss::mean_squared_error), std::invalid_argument);
  o.label_smoothing = 1;
  EXPECT_THROW(o.validate(Loss::cross_entropy), std::invalid_argument);
  LossOptions weights;
  weights.class_weights = {1, -1};
  EXPECT_THROW(weights.validate(Loss::cross_entropy), std::invalid_argument);
  LossOptions delta;
  delta.huber_delta = 0;
  EXPECT_THROW(delta.validate(Loss::huber), std::invalid_argument);
}

TEST(Loss, ATrainingStepsCrossEntropyHasLibtorchsValueAndGradientToTheLastBit) {
  // a training step's cross-entropy runs as one autograd node; it must give what
  // at::cross_entropy_loss gives, bit for bit, for any batch and class count
  for (int64_t seed = 0; seed < 60; ++seed) {
    at::manual_seed(seed);
    const int64_t batch = 1 + seed % 37, count = 2 + seed % 11;
    const at::Tensor logits = at::randn({batch, count}) * static_cast<double>(1 + seed % 5);
    const at::Tensor targets = at::randint(0, count, {batch}, at::kLong);
    const at::Tensor ours = logits.clone().requires_grad_();
    const at::Tensor theirs = logits.clone().requires_grad_();
    const at::Tensor loss = compute_loss(Loss::cross_entropy, ours, targets);
    const at::Tensor expected = at::cross_entropy_loss(theirs, targets);
    loss.backward();
    expected.backward();
    ASSERT_TRUE(loss.equal(expected)) << "batch " << batch << ", " << count << " classes";
    ASSERT_TRUE(ours.grad().equal(theirs.grad())) << "batch " << batch << ", " << count << " classes";
  }
}
