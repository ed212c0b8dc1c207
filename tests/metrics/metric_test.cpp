#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "fitscope/metrics/metric.hpp"

using namespace fitscope;

TEST(Accuracy, CountsArgmaxMatchesAcrossBatches) {
  auto metric = make_metric("accuracy");
  Metric& acc = *metric;
  const auto outputs = at::tensor({0.1f, 0.9f, 0.8f, 0.2f, 0.3f, 0.7f}).view({3, 2});
  acc.update(outputs, at::tensor({1, 0, 0}, at::kLong), at::Tensor());  // 2 of 3
  acc.update(at::tensor({0.0f, 1.0f}).view({1, 2}), at::tensor({1}, at::kLong), at::Tensor());  // 1 of 1
  EXPECT_DOUBLE_EQ(acc.result(), 3.0 / 4.0);
  acc.reset();
  EXPECT_DOUBLE_EQ(acc.result(), 0.0);
}

TEST(MeanLoss, WeightsEachBatchByItsSize) {
  MeanLoss loss;
  loss.update(at::Tensor(), at::zeros({3}), at::scalar_tensor(1.0f));
  loss.update(at::Tensor(), at::zeros({1}), at::scalar_tensor(5.0f));
  EXPECT_DOUBLE_EQ(loss.result(), (3 * 1.0 + 1 * 5.0) / 4);
}

TEST(Metric, SummedStatesOfTwoShardsGiveTheMetricOfTheUnionWhileTheMeanOfRatiosDoesNot) {
  auto pa = make_metric("accuracy"), pb = make_metric("accuracy"), psum = make_metric("accuracy");
  Metric &a = *pa, &b = *pb, &sum = *psum;
  a.update(at::tensor({0.f, 1.f}).view({1, 2}), at::tensor({1}, at::kLong), at::Tensor());  // 1/1
  b.update(at::tensor({1.f, 0.f, 1.f, 0.f, 1.f, 0.f}).view({3, 2}), at::tensor({1, 1, 0}, at::kLong),
           at::Tensor());  // 1/3
  const auto sa = a.state(), sb = b.state();
  sum.load_state({sa[0] + sb[0], sa[1] + sb[1]});
  EXPECT_DOUBLE_EQ(sum.result(), 2.0 / 4.0);
  EXPECT_NE((a.result() + b.result()) / 2, sum.result());
}

TEST(Metric, UnknownNamesAreRejectedWithTheKnownOnes) {
  try {
    make_metric("f7");
    FAIL() << "expected an exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "unknown metric 'f7' (known: accuracy, top_k_accuracy, top_<k>_accuracy, precision, "
                           "recall, f1 [_binary|_macro|_micro], auc, mean_squared_error, mean_absolute_error)");
  }
}
