// bfloat16 autocast: what runs in bfloat16, what stays float32, and that a bf16 fit still learns.
#include <gtest/gtest.h>

#include <ATen/autocast_mode.h>
#include <torch/nn/modules/linear.h>
#include <torch/utils.h>

#include "fitscope/data/sources/synthetic.hpp"
#include "fitscope/models/mlp.hpp"
#include "fitscope/train/trainer.hpp"

using namespace fitscope;

namespace {

/// Records the dtype of the activations its Linear layer produced.
struct Probe : torch::nn::Module {
  torch::nn::Linear fc{nullptr};
  at::ScalarType seen = at::kFloat;
  Probe() { fc = register_module("fc", torch::nn::Linear(16, 4)); }
  at::Tensor forward(const at::Tensor& x) {
    const at::Tensor y = fc->forward(x);
    seen = y.scalar_type();
    return y;
  }
};

}  // namespace

TEST(Precision, Bf16RunsTheLayersInBfloat16AndHandsBackFloat32Outputs) {
  torch::manual_seed(0);
  auto probe = std::make_shared<Probe>();
  auto model = make_model(torch::nn::ModuleHolder<Probe>(probe));
  const at::Tensor x = at::randn({8, 16});
  const at::Tensor full = forward_in(*model, x, Precision::float32);
  EXPECT_EQ(probe->seen, at::kFloat);
  const at::Tensor half = forward_in(*model, x, Precision::bfloat16);
  EXPECT_EQ(probe->seen, at::kBFloat16);  // the matrix product ran in bfloat16
  EXPECT_EQ(half.scalar_type(), at::kFloat);
  EXPECT_FALSE(half.equal(full));  // inputs and weights rounded to 8 bits of mantissa...
  EXPECT_LT((half - full).abs().max().item<double>(), 0.05 * full.abs().max().item<double>());  // ...and no more
  EXPECT_EQ(probe->fc->weight.scalar_type(), at::kFloat);  // the weights themselves stay float32
  // the autocast region ended with the forward pass
  const at::Tensor after = forward_in(*model, x, Precision::float32);
  EXPECT_EQ(probe->seen, at::kFloat);
  EXPECT_TRUE(after.equal(full));
}

TEST(Precision, ABf16FitKeepsFloat32WeightsAndGradientsAndLearns) {
  torch::manual_seed(0);
  TrainerOptions options;
  options.precision = Precision::bfloat16;
  options.warn = [](const std::string&) {};  // "no bfloat16 instructions" on some CPUs
  Trainer trainer{models::Mlp(), options};
  SyntheticOptions data;
  data.size = 3000;
  FitOptions fit;
  fit.epochs = 2;
  fit.validation_split = 0.2;
  const History h = trainer.fit(make_synthetic(data), fit);
  EXPECT_GT(h.last().at("val_accuracy"), 0.5);  // chance is 0.1
  EXPECT_LT(h.at("loss").back(), h.at("loss").front());
  // a backward as the step runs it, through the bfloat16 forward: float32 gradients for float32 weights
  const at::Tensor out = forward_in(trainer.model(), at::randn({4, 1, 28, 28}), Precision::bfloat16);
  compute_loss(Loss::cross_entropy, out, at::tensor(std::vector<int64_t>{0, 1, 2, 3}, at::kLong)).backward();
  for (const at::Tensor& p : trainer.model().parameters()) {
    EXPECT_EQ(p.scalar_type(), at::kFloat);
    ASSERT_TRUE(p.grad().defined());
    EXPECT_EQ(p.grad().scalar_type(), at::kFloat);
  }
  EXPECT_EQ(trainer.predict(at::randn({3, 1, 28, 28})).scalar_type(), at::kFloat);
}

TEST(Precision, NamesParseBackAndAnUnknownOneIsRefused) {
  for (Precision p : {Precision::float32, Precision::bfloat16}) EXPECT_EQ(parse_precision(precision_name(p)), p);
  try {
    parse_precision("fp16");
    FAIL() << "fp16 was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "unknown precision 'fp16' (expected 32 or bf16)");
  }
}
