#include "fitscope/train/optimizer_kind.hpp"

#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include <ATen/ATen.h>

#include <stdexcept>
#include <string>

#include "fitscope/train/fused_optimizer.hpp"
#include "fitscope/train/trainer.hpp"
#include "optimizer_kinds.hpp"
#include "optimizer_state.hpp"

namespace fitscope {
namespace detail {
namespace {

at::Tensor or_empty(const at::Tensor& t) { return t.defined() ? t : at::empty({0}); }

/// `state` as the kind's own state type; throws when it is another kind's.
template <typename State>
State& state_as(torch::optim::OptimizerParamState& state, const char* kind) {
  auto* s = dynamic_cast<State*>(&state);
  if (!s) throw std::invalid_argument(std::string("a parameter's optimizer state is not ") + kind + "'s: the optimizer is another kind");
  return *s;
}

template <typename Optimizer, typename Options>
std::unique_ptr<torch::optim::Optimizer> built(const std::vector<at::Tensor>& params, const Options& options, bool fused) {
  if (fused) return std::make_unique<FusedOptimizer>(params, options);
  return std::make_unique<Optimizer>(params, options);
}

/// Adam's and AdamW's states have the same fields under different types: exp_avg, exp_avg_sq,
/// max_exp_avg_sq (or empty), and the step count.
template <typename State>
void copy_adam_state(torch::optim::OptimizerParamState& state, at::Tensor* slot, int64_t& count, bool share) {
  auto& s = state_as<State>(state, "Adam");
  copy_into(slot[0], s.exp_avg(), share);
  copy_into(slot[1], s.exp_avg_sq(), share);
  copy_into(slot[2], or_empty(s.max_exp_avg_sq()), share);
  count = s.step();
}

template <typename State>
std::unique_ptr<torch::optim::OptimizerParamState> adam_state(const at::Tensor* slot, int64_t count, const ToParameter& to_parameter) {
  auto s = std::make_unique<State>();
  s->step(count);
  s->exp_avg(to_parameter(slot[0]));
  s->exp_avg_sq(to_parameter(slot[1]));
  const at::Tensor max = to_parameter(slot[2]);
  if (max.defined()) s->max_exp_avg_sq(max);
  return s;
}

/// SGD's state: the momentum buffer (or empty); no step count (0).
void copy_sgd_state(torch::optim::OptimizerParamState& state, at::Tensor* slot, int64_t& count, bool share) {
  copy_into(slot[0], or_empty(state_as<torch::optim::SGDParamState>(state, "SGD").momentum_buffer()), share);
  count = 0;
}

std::unique_ptr<torch::optim::OptimizerParamState> sgd_state(const at::Tensor* slot, int64_t, const ToParameter& to_parameter) {
  auto s = std::make_unique<torch::optim::SGDParamState>();
  const at::Tensor momentum = to_parameter(slot[0]);
  if (momentum.defined()) s->momentum_buffer(momentum);
  return s;
}

/// Adam's (decoupled: AdamW's) update as libtorch's step computes it, with the bias corrections and the
/// step size from the device's step count and learning rate.
template <typename Options, typename State, bool decoupled>
class AdamUpdate final : public ParamUpdate {
 public:
  AdamUpdate(torch::optim::OptimizerOptions& options, torch::optim::OptimizerParamState* state, const at::Tensor& param)
      : options_(static_cast<Options&>(options)), param_(param) {
    if (!state) throw std::invalid_argument("a parameter has no Adam state yet (libtorch makes it at its first step)");
    state_ = &state_as<State>(*state, "Adam");
    if (options_.amsgrad()) throw std::invalid_argument("amsgrad's running maximum is not captured");
  }
  void update(const DeviceScalars& s) override {
    at::Tensor grad = param_.grad();
    if (!grad.defined()) return;
    const auto [beta1, beta2] = options_.betas();
    if (options_.weight_decay() != 0) {
      if (decoupled) {
        param_.mul_(1 - s.learning_rate * options_.weight_decay());
      } else {
        grad = grad.add(param_, options_.weight_decay());
      }
    }
    at::Tensor& exp_avg = state_->exp_avg();
    at::Tensor& exp_avg_sq = state_->exp_avg_sq();
    exp_avg.mul_(beta1).add_(grad, 1 - beta1);
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, 1 - beta2);
    const at::Tensor correction1 = 1 - at::pow(beta1, s.step);
    const at::Tensor correction2 = 1 - at::pow(beta2, s.step);
    const at::Tensor denominator = (exp_avg_sq.sqrt() / correction2.sqrt()).add_(options_.eps());
    param_.addcdiv_(exp_avg * (s.learning_rate / correction1), denominator, -1);
  }
  std::vector<at::Tensor> state() override { return {state_->exp_avg(), state_->exp_avg_sq()}; }
  int64_t step_count() const override { return state_->step(); }
  void set_step_count(int64_t count) override { state_->step(count); }

 private:
  Options& options_;
  at::Tensor param_;
  State* state_;
};

template <typename Options, typename State, bool decoupled>
std::unique_ptr<ParamUpdate> adam_update(torch::optim::OptimizerOptions& options, torch::optim::OptimizerParamState* state,
                                         const at::Tensor& param) {
  return std::make_unique<AdamUpdate<Options, State, decoupled>>(options, state, param);
}

/// SGD's update (weight decay, momentum, Nesterov) as libtorch's step computes it.
class SgdUpdate final : public ParamUpdate {
 public:
  SgdUpdate(torch::optim::OptimizerOptions& options, torch::optim::OptimizerParamState* state, const at::Tensor& param)
      : options_(static_cast<torch::optim::SGDOptions&>(options)), param_(param) {
    if (options_.momentum() != 0) {
      if (!state) throw std::invalid_argument("a parameter has no momentum buffer yet (libtorch makes it at its first step)");
      buffer_ = state_as<torch::optim::SGDParamState>(*state, "SGD").momentum_buffer();
    }
  }
  void update(const DeviceScalars& s) override {
    at::Tensor d = param_.grad();
    if (!d.defined()) return;
    if (options_.weight_decay() != 0) d = d.add(param_, options_.weight_decay());
    if (options_.momentum() != 0) {
      buffer_.mul_(options_.momentum()).add_(d, 1 - options_.dampening());
      d = options_.nesterov() ? d.add(buffer_, options_.momentum()) : buffer_;
    }
    param_.sub_(d * s.learning_rate);
  }
  std::vector<at::Tensor> state() override { return buffer_.defined() ? std::vector<at::Tensor>{buffer_} : std::vector<at::Tensor>{}; }
  int64_t step_count() const override { return -1; }
  void set_step_count(int64_t) override {}

 private:
  torch::optim::SGDOptions& options_;
  at::Tensor param_, buffer_;
};

std::unique_ptr<ParamUpdate> sgd_update(torch::optim::OptimizerOptions& options, torch::optim::OptimizerParamState* state,
                                        const at::Tensor& param) {
  return std::make_unique<SgdUpdate>(options, state, param);
}

}  // namespace

const std::vector<OptimizerKindEntry>& optimizer_kinds() {
  static const std::vector<OptimizerKindEntry> kinds = {
      {OptimizerKind::adam, "adam",
       [](const std::vector<at::Tensor>& params, const TrainerOptions& o, bool fused) {
         return built<torch::optim::Adam>(params, torch::optim::AdamOptions(o.learning_rate).weight_decay(o.weight_decay.value_or(0)),
                                          fused);
       },
       3, 2, copy_adam_state<torch::optim::AdamParamState>, adam_state<torch::optim::AdamParamState>,
       adam_update<torch::optim::AdamOptions, torch::optim::AdamParamState, false>},
      {OptimizerKind::adamw, "adamw",
       [](const std::vector<at::Tensor>& params, const TrainerOptions& o, bool fused) {
         return built<torch::optim::AdamW>(
             params, torch::optim::AdamWOptions(o.learning_rate).weight_decay(o.weight_decay.value_or(1e-2)), fused);
       },
       3, 2, copy_adam_state<torch::optim::AdamWParamState>, adam_state<torch::optim::AdamWParamState>,
       adam_update<torch::optim::AdamWOptions, torch::optim::AdamWParamState, true>},
      {OptimizerKind::sgd, "sgd",
       [](const std::vector<at::Tensor>& params, const TrainerOptions& o, bool fused) {
         return built<torch::optim::SGD>(params,
                                         torch::optim::SGDOptions(o.learning_rate)
                                             .momentum(o.momentum)
                                             .nesterov(o.nesterov)
                                             .weight_decay(o.weight_decay.value_or(0)),
                                         fused);
       },
       1, 0, copy_sgd_state, sgd_state, sgd_update},
  };
  return kinds;
}

namespace {
/// "adam, adamw or sgd"
std::string kind_names() {
  const auto& kinds = optimizer_kinds();
  std::string names;
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    names += (i == 0 ? "" : i + 1 == kinds.size() ? " or " : ", ") + std::string(kinds[i].name);
  }
  return names;
}
}  // namespace

const OptimizerKindEntry& optimizer_kind_entry(OptimizerKind kind) {
  for (const auto& k : optimizer_kinds()) {
    if (k.kind == kind) return k;
  }
  throw std::invalid_argument("optimizer kind " + std::to_string(static_cast<int>(kind)) + " is none of " + kind_names());
}

}  // namespace detail

std::string optimizer_name(OptimizerKind kind) {
  for (const auto& k : detail::optimizer_kinds()) {
    if (k.kind == kind) return k.name;
  }
  return "unknown";
}

OptimizerKind parse_optimizer(const std::string& name) {
  for (const auto& k : detail::optimizer_kinds()) {
    if (name == k.name) return k.kind;
  }
  throw std::invalid_argument("unknown optimizer '" + name + "' (expected " + detail::kind_names() + ")");
}

}  // namespace fitscope
