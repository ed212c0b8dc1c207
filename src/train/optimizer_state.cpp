#include "optimizer_state.hpp"

#include <ATen/ATen.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "fitscope/train/fused_optimizer.hpp"

namespace fitscope::detail {
namespace {

template <typename Key>
Key state_key(const at::Tensor& p) {
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream s;  // libtorch 1.13: c10::guts::to_string of the TensorImpl pointer
    s << p.unsafeGetTensorImpl();
    return s.str();
  } else {
    return static_cast<Key>(p.unsafeGetTensorImpl());
  }
}

template <typename Map>
torch::optim::OptimizerParamState* find_state(Map& map, const at::Tensor& p) {
  const auto it = map.find(state_key<typename Map::key_type>(p));
  return it == map.end() ? nullptr : it->second.get();
}

template <typename Map>
void set_state(Map& map, const at::Tensor& p, std::unique_ptr<torch::optim::OptimizerParamState> state) {
  map[state_key<typename Map::key_type>(p)] = std::move(state);
}

std::vector<at::Tensor> all_parameters(torch::optim::Optimizer& optimizer) {
  std::vector<at::Tensor> out;
  for (auto& group : optimizer.param_groups()) {
    for (auto& p : group.params()) out.push_back(p);
  }
  return out;
}

at::Tensor or_empty(const at::Tensor& t) { return t.defined() ? t : at::empty({0}); }

/// State tensors per parameter: Adam's and AdamW's 3, SGD's 1.
std::size_t per_parameter(OptimizerKind kind) { return kind == OptimizerKind::sgd ? 1 : 3; }

/// Adam's and AdamW's states have the same fields under different types.
template <typename State>
void copy_adam_state(torch::optim::OptimizerParamState& state, at::Tensor* slot, int64_t& count) {
  auto& s = static_cast<State&>(state);
  copy_into(slot[0], s.exp_avg());
  copy_into(slot[1], s.exp_avg_sq());
  copy_into(slot[2], or_empty(s.max_exp_avg_sq()));
  count = s.step();
}

template <typename State, typename Copy>
std::unique_ptr<torch::optim::OptimizerParamState> adam_state(const at::Tensor* slot, int64_t count, Copy&& device_copy) {
  auto s = std::make_unique<State>();
  s->step(count);
  s->exp_avg(device_copy(slot[0]));
  s->exp_avg_sq(device_copy(slot[1]));
  const at::Tensor max = device_copy(slot[2]);
  if (max.defined()) s->max_exp_avg_sq(max);
  return s;
}

}  // namespace

void copy_into(at::Tensor& buffer, const at::Tensor& from) {
  const at::Tensor source = from.detach();
  if (buffer.defined() && buffer.sizes() == source.sizes() && buffer.scalar_type() == source.scalar_type() &&
      buffer.is_cpu()) {
    buffer.copy_(source);
  } else {
    buffer = source.to(at::kCPU, /*non_blocking=*/false, /*copy=*/true).contiguous();
  }
}

void copy_optimizer_state(torch::optim::Optimizer& optimizer, OptimizerKind kind, std::vector<at::Tensor>& tensors,
                          std::vector<int64_t>& counts) {
  if (auto* fused = dynamic_cast<FusedOptimizer*>(&optimizer)) return fused->copy_state(tensors, counts);
  const std::vector<at::Tensor> params = all_parameters(optimizer);
  const std::size_t per = per_parameter(kind);
  tensors.resize(params.size() * per);
  counts.assign(params.size(), -1);
  for (std::size_t i = 0; i < params.size(); ++i) {
    auto* state = find_state(optimizer.state(), params[i]);
    at::Tensor* slot = &tensors[i * per];
    if (!state) {
      for (std::size_t k = 0; k < per; ++k) slot[k] = at::empty({0});
      continue;
    }
    if (kind == OptimizerKind::adam) {
      copy_adam_state<torch::optim::AdamParamState>(*state, slot, counts[i]);
    } else if (kind == OptimizerKind::adamw) {
      copy_adam_state<torch::optim::AdamWParamState>(*state, slot, counts[i]);
    } else {
      auto& s = static_cast<torch::optim::SGDParamState&>(*state);
      copy_into(slot[0], or_empty(s.momentum_buffer()));
      counts[i] = 0;
    }
  }
}

void check_optimizer_state(torch::optim::Optimizer& optimizer, OptimizerKind kind, const std::vector<at::Tensor>& tensors,
                           const std::vector<int64_t>& counts) {
  const std::vector<at::Tensor> params = all_parameters(optimizer);
  const std::size_t per = per_parameter(kind);
  const bool adam = kind != OptimizerKind::sgd;
  if (counts.size() != params.size() || tensors.size() != params.size() * per) {
    throw std::invalid_argument("the optimizer state holds " + std::to_string(counts.size()) + " parameters and " +
                                std::to_string(tensors.size()) + " tensors, the model has " + std::to_string(params.size()) +
                                " parameters (" + std::to_string(per) + " tensors each for " + optimizer_name(kind) + ")");
  }
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (counts[i] < 0) continue;
    for (std::size_t k = 0; k < per; ++k) {
      const at::Tensor& t = tensors[i * per + k];
      const bool required = adam && k < 2;  // exp_avg and exp_avg_sq
      if (!required && (!t.defined() || t.numel() == 0)) continue;
      if (!t.defined() || !t.sizes().equals(params[i].sizes()) || !at::isFloatingType(t.scalar_type())) {
        throw std::invalid_argument("field optimizer[" + std::to_string(i * per + k) + "]: " +
                                    (t.defined() ? "sizes " + c10::str(t.sizes()) + " of " + c10::toString(t.scalar_type())
                                                 : std::string("no tensor")) +
                                    " for parameter " + std::to_string(i) + " of sizes " + c10::str(params[i].sizes()));
      }
    }
  }
}

void load_optimizer_state(torch::optim::Optimizer& optimizer, OptimizerKind kind, const std::vector<at::Tensor>& tensors,
                          const std::vector<int64_t>& counts) {
  if (auto* fused = dynamic_cast<FusedOptimizer*>(&optimizer)) return fused->load_state(tensors, counts);  // checks too
  check_optimizer_state(optimizer, kind, tensors, counts);
  const std::vector<at::Tensor> params = all_parameters(optimizer);
  const std::size_t per = per_parameter(kind);
  const auto device_copy = [](const at::Tensor& t, const at::Tensor& like) {
    return t.numel() == 0 && like.numel() != 0 ? at::Tensor() : t.to(like.device(), false, true);
  };
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (counts[i] < 0) continue;
    const at::Tensor* slot = &tensors[i * per];
    const auto to_parameter = [&](const at::Tensor& t) { return device_copy(t, params[i]); };
    if (kind == OptimizerKind::adam) {
      set_state(optimizer.state(), params[i], adam_state<torch::optim::AdamParamState>(slot, counts[i], to_parameter));
    } else if (kind == OptimizerKind::adamw) {
      set_state(optimizer.state(), params[i], adam_state<torch::optim::AdamWParamState>(slot, counts[i], to_parameter));
    } else {
      auto s = std::make_unique<torch::optim::SGDParamState>();
      const at::Tensor momentum = device_copy(slot[0], params[i]);
      if (momentum.defined()) s->momentum_buffer(momentum);
      set_state(optimizer.state(), params[i], std::move(s));
    }
  }
}

}  // namespace fitscope::detail
