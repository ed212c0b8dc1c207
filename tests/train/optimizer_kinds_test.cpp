// The optimizer kinds' table: every kind by its name, its state copied out and loaded back as it was,
// and a kind the table does not hold (or another kind's state) refused by name, never read through
// another entry.

#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "fitscope/models/mlp.hpp"
#include "fitscope/train/trainer.hpp"
#include "train/optimizer_kinds.hpp"
#include "train/optimizer_state.hpp"

using namespace fitscope;

namespace {

/// One step of `kind` (libtorch's own optimizer, not the fused one) on a small MLP, so every parameter
/// has state.
std::unique_ptr<torch::optim::Optimizer> stepped(OptimizerKind kind, std::vector<at::Tensor>& params) {
  TrainerOptions o;
  o.optimizer = kind;
  if (kind == OptimizerKind::sgd) o.momentum = 0.9;
  auto optimizer = fitscope::detail::optimizer_kind_entry(kind).make(params, o, /*fused=*/false);
  for (auto& p : params) p.mutable_grad() = at::ones_like(p);
  optimizer->step();
  return optimizer;
}

std::vector<at::Tensor> mlp_parameters() {
  torch::manual_seed(3);
  return models::Mlp(4, 3)->parameters();
}

}  // namespace

TEST(OptimizerKinds, EveryKindIsFoundByItsNameAndItsStateLoadsBackAsItWas) {
  ASSERT_EQ(fitscope::detail::optimizer_kinds().size(), 3u);
  for (const auto& entry : fitscope::detail::optimizer_kinds()) {
    EXPECT_EQ(parse_optimizer(entry.name), entry.kind);
    EXPECT_EQ(optimizer_name(entry.kind), entry.name);
    std::vector<at::Tensor> params = mlp_parameters();
    auto optimizer = stepped(entry.kind, params);
    std::vector<at::Tensor> tensors;
    std::vector<int64_t> counts;
    fitscope::detail::copy_optimizer_state(*optimizer, entry.kind, tensors, counts);
    ASSERT_EQ(tensors.size(), params.size() * entry.state_tensors) << entry.name;
    EXPECT_EQ(counts.front(), entry.kind == OptimizerKind::sgd ? 0 : 1) << entry.name;
    std::vector<at::Tensor> fresh_params = mlp_parameters();
    TrainerOptions o;
    o.optimizer = entry.kind;
    if (entry.kind == OptimizerKind::sgd) o.momentum = 0.9;
    auto fresh = entry.make(fresh_params, o, false);
    fitscope::detail::load_optimizer_state(*fresh, entry.kind, tensors, counts);
    std::vector<at::Tensor> again;
    std::vector<int64_t> again_counts;
    fitscope::detail::copy_optimizer_state(*fresh, entry.kind, again, again_counts);
    EXPECT_EQ(again_counts, counts) << entry.name;
    ASSERT_EQ(again.size(), tensors.size());
    for (std::size_t i = 0; i < tensors.size(); ++i) EXPECT_TRUE(again[i].equal(tensors[i])) << entry.name << " tensor " << i;
  }
}

TEST(OptimizerKinds, AKindTheTableDoesNotHoldIsRefusedByName) {
  const auto unknown = static_cast<OptimizerKind>(7);
  try {
    fitscope::detail::optimizer_kind_entry(unknown);
    FAIL() << "an unknown kind was given an entry";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "optimizer kind 7 is none of adam, adamw or sgd");
  }
  EXPECT_EQ(optimizer_name(unknown), "unknown");
  EXPECT_THROW(parse_optimizer("rmsprop"), std::invalid_argument);
  // the trainer, and a checkpoint's state, refuse it the same way
  TrainerOptions o;
  o.optimizer = unknown;
  EXPECT_THROW(Trainer(models::Mlp(4, 3), o), std::invalid_argument);
  std::vector<at::Tensor> params = mlp_parameters();
  auto sgd = stepped(OptimizerKind::sgd, params);
  std::vector<at::Tensor> tensors;
  std::vector<int64_t> counts;
  EXPECT_THROW(fitscope::detail::copy_optimizer_state(*sgd, unknown, tensors, counts), std::invalid_argument);
}

TEST(OptimizerKinds, AnotherKindsStateIsRefusedNotReadThroughThisKindsEntry) {
  std::vector<at::Tensor> params = mlp_parameters();
  auto sgd = stepped(OptimizerKind::sgd, params);
  std::vector<at::Tensor> tensors;
  std::vector<int64_t> counts;
  try {
    fitscope::detail::copy_optimizer_state(*sgd, OptimizerKind::adam, tensors, counts);
    FAIL() << "SGD's state was read as Adam's";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("not Adam's"), std::string::npos) << e.what();
  }
  std::vector<at::Tensor> adam_params = mlp_parameters();
  auto adam = stepped(OptimizerKind::adamw, adam_params);
  EXPECT_THROW(fitscope::detail::copy_optimizer_state(*adam, OptimizerKind::sgd, tensors, counts), std::invalid_argument);
  // AdamW's state is not Adam's either, though its fields are the same
  EXPECT_THROW(fitscope::detail::copy_optimizer_state(*adam, OptimizerKind::adam, tensors, counts), std::invalid_argument);
}
