#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/script.h>

#include "fitscope/data/sources/synthetic.hpp"
#include "fitscope/models/script_model.hpp"
#include "fitscope/train/trainer.hpp"

using namespace fitscope;

namespace {

/// A linear classifier defined in TorchScript source, without Python.
torch::jit::Module scripted_linear() {
  torch::jit::Module m("Linear");
  m.register_parameter("weight", at::zeros({784, 10}).set_requires_grad(true), /*is_buffer=*/false);
  m.register_buffer("calls", at::zeros({1}));
  m.define(R"(
def forward(self, x):
    return x.flatten(1).matmul(self.weight)
)");
  return m;
}

}  // namespace

TEST(ScriptModel, TrainsThroughTheSameTrainerAsACppModule) {
  torch::jit::Module module = scripted_linear();
  Trainer trainer(module);  // the Trainer accepts a torch::jit::Module directly
  SyntheticOptions data;
  data.size = 640;
  FitOptions fit;
  fit.epochs = 2;
  fit.loader.workers = 0;
  const History history = trainer.fit(make_synthetic(data), fit);
  EXPECT_GT(module.attr("weight").toTensor().abs().sum().item<float>(), 0.0f);  // the module itself trained
  EXPECT_GT(history.last().get("accuracy").value_or(0), 0.3);
  const auto state = trainer.model().named_state();
  ASSERT_EQ(state.size(), 2u);
  EXPECT_EQ(state[0].first, "weight");
  EXPECT_EQ(state[1].first, "calls");
}

TEST(ScriptModel, RejectsAForwardThatDoesNotTakeOneTensor) {
  torch::jit::Module m("Two");
  m.define(R"(
def forward(self, x, y):
    return x + y
)");
  try {
    ScriptModel model(m, "two.pt");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind("two.pt: forward must take one tensor, its schema is forward(", 0), 0u) << e.what();
  }
}

TEST(ScriptModel, RejectsAForwardThatReturnsSomethingElse) {
  torch::jit::Module m("Pair");
  m.define(R"(
def forward(self, x):
    return (x, x)
)");
  ScriptModel model(m, "pair.pt");
  try {
    model.forward(at::zeros({1, 2}));
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "pair.pt: forward returned a Tuple, expected a tensor");
  }
}
