#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <set>

#include "fitscope/data/loading/loader.hpp"
#include "fitscope/data/sources/synthetic.hpp"

using namespace fitscope;

namespace {
TensorDataset numbered_set(int64_t n) {
  return TensorDataset(at::arange(n, at::kFloat).view({n, 1}), at::arange(n, at::kLong));
}
}  // namespace

TEST(Synthetic, IsDeterminedByItsSeed) {
  SyntheticOptions o;
  o.size = 200;
  o.seed = 7;
  const auto a = make_synthetic(o), b = make_synthetic(o);
  EXPECT_TRUE(at::equal(a.inputs(), b.inputs()));
  EXPECT_TRUE(at::equal(a.targets(), b.targets()));
  o.seed = 8;
  EXPECT_FALSE(at::equal(a.inputs(), make_synthetic(o).inputs()));
}

TEST(Synthetic, SetsOfOtherSeedsAroundOnePrototypeSeedShareTheirClasses) {
  // without noise or shifts an example is its class's prototype times a brightness: scaled to a peak
  // of 1, the examples of one class are the prototype, whichever set they come from
  const auto class_image = [](uint64_t seed, std::optional<uint64_t> prototype_seed, int64_t label) {
    SyntheticOptions o;
    o.size = 100;
    o.seed = seed;
    o.prototype_seed = prototype_seed;
    o.noise = 0;
    o.max_shift = 0;
    const TensorDataset d = make_synthetic(o);
    const at::Tensor image = d.inputs()[at::nonzero(d.targets().eq(label)).flatten()[0].item<int64_t>()];
    return image / image.max();
  };
  for (int64_t label : {0, 7}) {
    EXPECT_TRUE(at::allclose(class_image(1, 5, label), class_image(2, 5, label), 1e-5, 1e-6)) << label;
    EXPECT_TRUE(at::allclose(class_image(5, std::nullopt, label), class_image(2, 5, label), 1e-5, 1e-6)) << label;
    EXPECT_FALSE(at::allclose(class_image(1, std::nullopt, label), class_image(2, std::nullopt, label), 1e-3, 1e-3)) << label;
  }
}

TEST(Synthetic, GivesGrayscaleImagesAndLabelsOfEveryClass) {
  SyntheticOptions o;
  o.size = 1000;
  const auto d = make_synthetic(o);
  EXPECT_EQ(d.inputs().sizes(), (std::vector<int64_t>{1000, 1, 28, 28}));
  EXPECT_EQ(d.inputs().scalar_type(), at::kFloat);
  EXPECT_EQ(d.targets().scalar_type(), at::kLong);
  EXPECT_EQ(std::get<0>(at::_unique(d.targets())).numel(), 10);
}

TEST(Synthetic, RejectsSizesOutOfRangeByName) {
  SyntheticOptions o;
  o.classes = 1;
  EXPECT_THROW(
      {
        try {
          make_synthetic(o);
        } catch (const std::invalid_argument& e) {
          EXPECT_STREQ(e.what(), "synthetic classes must be >= 2, got 1");
          throw;
        }
      },
      std::invalid_argument);
}

TEST(TensorDataset, SplitHoldsOutTheLastFractionLikeKeras) {
  const auto [train, validation] = numbered_set(10).split(0.3);
  EXPECT_EQ(train.size(), 7);
  EXPECT_EQ(validation.size(), 3);
  EXPECT_EQ(validation.targets()[0].item<int64_t>(), 7);
}

TEST(TensorDataset, GathersABatchOfAnyIndicesAsIndexSelectDoes) {
  const at::Tensor inputs = at::rand({50, 1, 4, 3});
  const at::Tensor targets = at::randint(0, 10, {50}, at::kLong);
  const std::vector<int64_t> indices{7, 3, 49, 3, 0};  // shuffled, repeated, both ends
  const at::Tensor rows = at::tensor(indices, at::kLong);
  const TensorDataset data(inputs, targets);
  const Batch batch = data.get_batch(indices);
  EXPECT_TRUE(at::equal(batch.inputs, inputs.index_select(0, rows)));
  EXPECT_TRUE(at::equal(batch.targets, targets.index_select(0, rows)));
  // inputs that are a view, not contiguous, take the general path to the same rows
  const at::Tensor transposed = at::rand({3, 50}).t();
  const Batch viewed = TensorDataset(transposed, targets).get_batch(indices);
  EXPECT_TRUE(at::equal(viewed.inputs, transposed.index_select(0, rows)));
  // consecutive indices are a view of the rows
  EXPECT_EQ(data.get_batch({4, 5, 6}).inputs.data_ptr(), inputs[4].data_ptr());
  EXPECT_THROW(data.get_batch({1, 50}), std::out_of_range);
}

TEST(TensorDataset, RejectsMismatchedFirstDimensions) {
  try {
    TensorDataset(at::zeros({4, 2}), at::zeros({5}));
    FAIL() << "expected an exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "inputs and targets must have the same first dimension, got 4 and 5");
  }
}

