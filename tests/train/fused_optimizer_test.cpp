// FusedOptimizer against libtorch's torch::optim: the same rule for every optimizer and option, on
// its own and inside the Trainer on the seed models, and states that pass between the two.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>
#include <torch/serialize/output-archive.h>
#include <torch/utils.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fitscope/data/sources/synthetic.hpp"
#include "fitscope/models/cnn.hpp"
#include "fitscope/models/mlp.hpp"
#include "fitscope/train/fused_optimizer.hpp"
#include "fitscope/train/trainer.hpp"

using namespace fitscope;

namespace {

/// Every pair of tensors within 1e-6 of each other, relative to the tensor's largest value (rounding
/// differs by an ulp of the larger weights; a weight near zero shares their absolute error).
::testing::AssertionResult agree(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  if (a.size() != b.size()) return ::testing::AssertionFailure() << a.size() << " tensors against " << b.size();
  for (std::size_t i = 0; i < a.size(); ++i) {
    const at::Tensor x = a[i].detach(), y = b[i].detach();
    const double bound = std::max(x.abs().max().item<double>(), y.abs().max().item<double>()) * 1e-6;
    if ((x - y).abs().max().item<double>() > bound) {
      return ::testing::AssertionFailure() << "tensor " << i << " differs by up to " << (x - y).abs().max().item<double>()
                                           << " (largest value " << x.abs().max().item<double>() << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

std::vector<at::Tensor> fresh_parameters() {
  torch::manual_seed(3);
  std::vector<at::Tensor> params{at::randn({10, 784}) * 0.05, at::randn({10}) * 0.05, at::randn({3, 5}),
                                 at::randn({70000}) * 0.01};  // the last one large enough to run on the pool
  for (auto& p : params) p.set_requires_grad(true);
  return params;
}

std::vector<at::Tensor> clones(const std::vector<at::Tensor>& params) {
  std::vector<at::Tensor> out;
  for (const auto& p : params) out.push_back(p.detach().clone().set_requires_grad(true));
  return out;
}

/// `steps` updates of both optimizers from the same gradients (a pull towards zero plus a wave that
/// changes every step); the third parameter has no gradient on every fifth step.
void run_both(torch::optim::Optimizer& reference, std::vector<at::Tensor>& reference_params, FusedOptimizer& fused,
              std::vector<at::Tensor>& fused_params, int steps) {
  for (int step = 0; step < steps; ++step) {
    for (auto* params : {&reference_params, &fused_params}) {
      for (std::size_t i = 0; i < params->size(); ++i) {
        at::Tensor& p = (*params)[i];
        p.mutable_grad() = at::Tensor();
        if (i == 2 && step % 5 == 4) continue;
        const at::Tensor noise = at::sin(at::arange(p.numel(), at::kFloat).view_as(p) * 0.37 + static_cast<double>(step)) * 0.1;
        p.mutable_grad() = p.detach() * 0.3 + noise;
      }
    }
    reference.step();
    fused.step();
  }
}

struct Case {
  std::string name;
  std::function<std::unique_ptr<torch::optim::Optimizer>(const std::vector<at::Tensor>&)> reference;
  std::function<std::unique_ptr<FusedOptimizer>(const std::vector<at::Tensor>&)> fused;
};

template <typename Torch, typename Options>
Case make_case(const std::string& name, const Options& options) {
  return {name, [options](const std::vector<at::Tensor>& p) { return std::make_unique<Torch>(p, options); },
          [options](const std::vector<at::Tensor>& p) { return std::make_unique<FusedOptimizer>(p, options); }};
}

std::vector<Case> every_option() {
  using namespace torch::optim;
  return {
      make_case<Adam>("adam", AdamOptions(1e-3)),
      make_case<Adam>("adam weight decay", AdamOptions(1e-2).weight_decay(0.1).betas({0.8, 0.99}).eps(1e-6)),
      make_case<Adam>("adam amsgrad", AdamOptions(1e-3).amsgrad(true).weight_decay(1e-3)),
      make_case<AdamW>("adamw", AdamWOptions(1e-3)),
      make_case<AdamW>("adamw amsgrad", AdamWOptions(5e-3).amsgrad(true).weight_decay(0.05)),
      make_case<SGD>("sgd", SGDOptions(0.05)),
      make_case<SGD>("sgd weight decay", SGDOptions(0.05).weight_decay(1e-2)),
      make_case<SGD>("sgd momentum dampening", SGDOptions(0.05).momentum(0.9).dampening(0.3)),
      make_case<SGD>("sgd nesterov weight decay", SGDOptions(0.05).momentum(0.8).nesterov(true).weight_decay(1e-3)),
  };
}

}  // namespace

TEST(FusedOptimizer, FollowsTorchOptimForEveryOptimizerAndOptionOverTwoHundredSteps) {
  for (const Case& c : every_option()) {
    std::vector<at::Tensor> reference_params = fresh_parameters(), fused_params = clones(reference_params);
    auto reference = c.reference(reference_params);
    auto fused = c.fused(fused_params);
    run_both(*reference, reference_params, *fused, fused_params, 200);
    EXPECT_TRUE(agree(reference_params, fused_params)) << c.name;
    // and they moved: a rule that did nothing would agree too
    EXPECT_FALSE(at::allclose(fused_params[0], fresh_parameters()[0], 1e-3, 1e-4)) << c.name;
  }
}

TEST(FusedOptimizer, FollowsTheLearningRateSetThroughItsGroups) {
  std::vector<at::Tensor> reference_params = fresh_parameters(), fused_params = clones(reference_params);
  torch::optim::Adam reference(reference_params, torch::optim::AdamOptions(1e-3));
  FusedOptimizer fused(fused_params, torch::optim::AdamOptions(1e-3));
  run_both(reference, reference_params, fused, fused_params, 3);
  for (auto* optimizer : std::initializer_list<torch::optim::Optimizer*>{&reference, &fused}) {
    optimizer->param_groups().front().options().set_lr(0.05);
  }
  run_both(reference, reference_params, fused, fused_params, 3);
  EXPECT_TRUE(agree(reference_params, fused_params));
}

TEST(FusedOptimizer, FollowsItsGroupsWhenAParameterIsReplacedOrAGroupAdded) {
  std::vector<at::Tensor> reference_params = fresh_parameters(), fused_params = clones(reference_params);
  torch::optim::Adam reference(reference_params, torch::optim::AdamOptions(1e-3));
  FusedOptimizer fused(fused_params, torch::optim::AdamOptions(1e-3));
  run_both(reference, reference_params, fused, fused_params, 3);
  // the last parameter replaced by a new tensor (its state starts afresh in both), then a group added;
  // the replaced ones kept alive: libtorch keys an optimizer's state by the TensorImpl's address and keeps
  // a replaced parameter's, so a new tensor made at a freed one's address is refused by add_param_group as
  // "in more than one parameter group" (now and then, as the allocator reuses the address)
  const std::vector<at::Tensor> replaced = {reference_params.back(), fused_params.back()};
  reference_params.back() = at::randn({70000}).set_requires_grad(true);
  fused_params.back() = reference_params.back().detach().clone().set_requires_grad(true);
  reference.param_groups().front().params().back() = reference_params.back();
  fused.param_groups().front().params().back() = fused_params.back();
  run_both(reference, reference_params, fused, fused_params, 3);
  reference_params.push_back(at::randn({4, 4}).set_requires_grad(true));
  fused_params.push_back(reference_params.back().detach().clone().set_requires_grad(true));
  reference.add_param_group(torch::optim::OptimizerParamGroup({reference_params.back()}));
  fused.add_param_group(torch::optim::OptimizerParamGroup({fused_params.back()}));
  run_both(reference, reference_params, fused, fused_params, 3);
  EXPECT_TRUE(agree(reference_params, fused_params));
}

TEST(FusedOptimizer, ItsStateInTheCheckpointLayoutResumesBitIdentically) {
  for (const Case& c : every_option()) {
    std::vector<at::Tensor> reference_params = fresh_parameters(), fused_params = clones(reference_params);
    auto reference = c.reference(reference_params);
    auto fused = c.fused(fused_params);
    run_both(*reference, reference_params, *fused, fused_params, 7);
    std::vector<at::Tensor> tensors;
    std::vector<int64_t> counts;
    fused->copy_state(tensors, counts);
    ASSERT_EQ(counts.size(), fused_params.size()) << c.name;
    std::vector<at::Tensor> resumed_params = clones(fused_params);
    auto resumed = c.fused(resumed_params);
    resumed->load_state(tensors, counts);
    // the first fused optimizer and the resumed one take the same 5 steps from the same point
    run_both(*fused, fused_params, *resumed, resumed_params, 5);
    for (std::size_t i = 0; i < fused_params.size(); ++i) {
      EXPECT_TRUE(at::equal(fused_params[i], resumed_params[i])) << c.name << ", parameter " << i;
    }
  }
}

namespace {

std::vector<at::Tensor> weights_of(Trainer& trainer) {
  std::vector<at::Tensor> out;
  for (const at::Tensor& p : trainer.model().parameters()) out.push_back(p.detach().clone());
  return out;
}

/// Captures the trainer's state after global steps `at` and `at` + 1.
class StatesAt : public Callback {
 public:
  explicit StatesAt(int64_t at) : at_(at) {}
  TrainingState first, next;
  void on_train_batch_end(int64_t, Logs&) override {
    const int64_t step = context().global_step();
    if (step != at_ && step != at_ + 1) return;
    TrainingState& into = step == at_ ? first : next;
    context().request_checkpoint([this, &into](int64_t epoch, int64_t batch) { context().capture_state(into, epoch, batch); });
  }

 private:
  int64_t at_;
};

std::vector<at::Tensor> weights_in(const TrainingState& state) {
  std::vector<at::Tensor> out;
  for (const auto& [name, tensor] : state.model) out.push_back(tensor);
  return out;
}

/// `from`'s state at a step given to `to`, which takes the next step: its weights, against `from`'s own
/// next step.
::testing::AssertionResult hands_over(const StatesAt& from, Trainer& to, const TensorDataset& data, FitOptions fit) {
  to.context().restore(from.first);
  fit.max_steps = 1;
  to.fit(data, fit);
  return agree(weights_in(from.next), weights_of(to));
}

template <typename Module>
std::unique_ptr<Trainer> seeded_trainer(TrainerOptions options) {
  torch::manual_seed(11);
  return std::make_unique<Trainer>(Module(), std::move(options));
}

}  // namespace

TEST(FusedOptimizer, TrainsTheSeedModelsAsTorchOptimDoesAndHandsItsStateToIt) {
#ifdef FITSCOPE_SANITIZED
  GTEST_SKIP() << "twelve trainings of the seed models compared with torch::optim: run in the plain build (the "
                  "sanitizers check the same update in FollowsTorchOptimForEveryOptimizerAndOptionOverTwoHundredSteps)";
#endif
  SyntheticOptions data_options;
  data_options.size = 640;
  const TensorDataset data = make_synthetic(data_options);
  FitOptions fit;
  fit.loader.batch_size = 32;
  fit.loader.workers = 0;
  fit.epochs = 10;  // 200 steps
  for (const std::string& model : {"mlp", "cnn"}) {
    for (OptimizerKind kind : {OptimizerKind::adam, OptimizerKind::adamw, OptimizerKind::sgd}) {
      const std::string name = model + " " + optimizer_name(kind);
      TrainerOptions o;
      o.optimizer = kind;
      o.learning_rate = kind == OptimizerKind::sgd ? 0.05 : 1e-3;
      if (kind == OptimizerKind::sgd) o.momentum = 0.9;
      o.warmup_steps = 0;
      o.threads.intra_op = 1;
      o.metrics = {};
      TrainerOptions on_torch = o;
      on_torch.fused_optimizer = false;
      const auto make = [&](const TrainerOptions& options) {
        return model == "mlp" ? seeded_trainer<models::Mlp>(options) : seeded_trainer<models::Cnn>(options);
      };
      auto fused = make(o);
      auto reference = make(on_torch);
      ASSERT_NE(dynamic_cast<FusedOptimizer*>(&fused->optimizer()), nullptr) << name;
      ASSERT_EQ(dynamic_cast<FusedOptimizer*>(&reference->optimizer()), nullptr) << name;
      // 200 steps of each from the same weights
      auto fused_states = std::make_shared<StatesAt>(150), torch_states = std::make_shared<StatesAt>(150);
      FitOptions capturing = fit;
      capturing.callbacks = {fused_states};
      fused->fit(data, capturing);
      capturing.callbacks = {torch_states};
      reference->fit(data, capturing);
      EXPECT_TRUE(agree(weights_of(*reference), weights_of(*fused))) << name;
      // each one's state in a checkpoint carries the other on: a step from it lands where the first's did
      EXPECT_TRUE(hands_over(*fused_states, *make(on_torch), data, fit)) << name << ": fused to libtorch";
      EXPECT_TRUE(hands_over(*torch_states, *make(o), data, fit)) << name << ": libtorch to fused";
    }
  }
}

TEST(FusedOptimizer, RefusesWhatItCannotUpdateAndASerializationThatWouldLoseItsState) {
  std::vector<at::Tensor> doubles{at::zeros({3}, at::kDouble).set_requires_grad(true)};
  EXPECT_FALSE(FusedOptimizer::supports(doubles));
  try {
    FusedOptimizer fused(doubles, torch::optim::SGDOptions(0.1));
    FAIL() << "accepted a double parameter";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("parameter 0 is Double on cpu"), std::string::npos) << e.what();
  }
  std::vector<at::Tensor> params = fresh_parameters();
  FusedOptimizer fused(params, torch::optim::AdamOptions(1e-3));
  torch::serialize::OutputArchive archive;
  EXPECT_THROW(fused.save(archive), std::logic_error);
  std::vector<at::Tensor> tensors(params.size() * 3);
  std::vector<int64_t> counts(params.size(), 1);
  tensors[0] = at::zeros({2});
  EXPECT_THROW(fused.load_state(tensors, counts), std::invalid_argument);
}
