#include "optimizer_state.hpp"

#include <ATen/ATen.h>

#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "fitscope/train/fused_optimizer.hpp"
#include "optimizer_kinds.hpp"

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

}  // namespace

torch::optim::OptimizerParamState* find_optimizer_state(torch::optim::Optimizer& optimizer, const at::Tensor& p) {
  return find_state(optimizer.state(), p);
}

void copy_into(at::Tensor& buffer, const at::Tensor& from, bool share) {
  const at::Tensor source = from.detach();
  if (share && (!source.defined() || (source.is_cpu() && source.is_contiguous()))) {
    buffer = source;
    return;
  }
  if (buffer.defined() && buffer.sizes() == source.sizes() && buffer.scalar_type() == source.scalar_type() &&
      buffer.is_cpu()) {
    buffer.copy_(source);
  } else {
    buffer = source.to(at::kCPU, /*non_blocking=*/false, /*copy=*/true).contiguous();
  }
}

void copy_optimizer_state(torch::optim::Optimizer& optimizer, OptimizerKind kind, std::vector<at::Tensor>& tensors,
                          std::vector<int64_t>& counts, bool share) {
  if (auto* fused = dynamic_cast<FusedOptimizer*>(&optimizer)) return fused->copy_state(tensors, counts, share);
  const OptimizerKindEntry& entry = optimizer_kind_entry(kind);
  const std::vector<at::Tensor> params = all_parameters(optimizer);
  const std::size_t per = entry.state_tensors;
  tensors.resize(params.size() * per);
  counts.assign(params.size(), -1);
  for (std::size_t i = 0; i < params.size(); ++i) {
    auto* state = find_state(optimizer.state(), params[i]);
    at::Tensor* slot = &tensors[i * per];
    if (!state) {
      for (std::size_t k = 0; k < per; ++k) slot[k] = at::empty({0});
      continue;
    }
    entry.copy_state(*state, slot, counts[i], share);
  }
}

void check_optimizer_state(torch::optim::Optimizer& optimizer, OptimizerKind kind, const std::vector<at::Tensor>& tensors,
                           const std::vector<int64_t>& counts) {
  const OptimizerKindEntry& entry = optimizer_kind_entry(kind);
  const std::vector<at::Tensor> params = all_parameters(optimizer);
  const std::size_t per = entry.state_tensors;
  if (counts.size() != params.size() || tensors.size() != params.size() * per) {
    throw std::invalid_argument("the optimizer state holds " + std::to_string(counts.size()) + " parameters and " +
                                std::to_string(tensors.size()) + " tensors, the model has " + std::to_string(params.size()) +
                                " parameters (" + std::to_string(per) + " tensors each for " + entry.name + ")");
  }
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (counts[i] < 0) continue;
    for (std::size_t k = 0; k < per; ++k) {
      const at::Tensor& t = tensors[i * per + k];
      const bool required = k < entry.required_tensors;  // Adam's exp_avg and exp_avg_sq
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
  const OptimizerKindEntry& entry = optimizer_kind_entry(kind);
  const std::vector<at::Tensor> params = all_parameters(optimizer);
  const std::size_t per = entry.state_tensors;
  const auto device_copy = [](const at::Tensor& t, const at::Tensor& like) {
    return t.numel() == 0 && like.numel() != 0 ? at::Tensor() : t.to(like.device(), false, true);
  };
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (counts[i] < 0) continue;
    const at::Tensor* slot = &tensors[i * per];
    const ToParameter to_parameter = [&](const at::Tensor& t) { return device_copy(t, params[i]); };
    set_state(optimizer.state(), params[i], entry.make_state(slot, counts[i], to_parameter));
  }
}

}  // namespace fitscope::detail
