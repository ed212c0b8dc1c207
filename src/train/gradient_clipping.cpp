#include "fitscope/train/gradient_clipping.hpp"

#include <ATen/ATen.h>

#include <cmath>
#include <stdexcept>
#include <string>

namespace fitscope {

void GradientClipping::validate() const {
  for (const auto& [name, v] : {std::pair{"clip norm", max_norm}, std::pair{"clip value", max_value}}) {
    if (!std::isfinite(v) || v < 0) {
      throw std::invalid_argument(std::string(name) + " must be a finite number >= 0 (0 = off), got " + std::to_string(v));
    }
  }
  if (max_norm > 0 && max_value > 0) {
    throw std::invalid_argument("clip norm and clip value exclude each other (as in Keras and Lightning), got " +
                                std::to_string(max_norm) + " and " + std::to_string(max_value));
  }
}

double clip_gradients(const std::vector<at::Tensor>& parameters, const GradientClipping& clipping) {
  std::vector<at::Tensor> grads;
  for (const at::Tensor& p : parameters) {
    if (p.grad().defined()) grads.push_back(p.grad());
  }
  if (grads.empty()) return 0;
  std::vector<at::Tensor> norms;
  norms.reserve(grads.size());
  for (const at::Tensor& g : grads) norms.push_back(g.detach().norm(2).to(at::kFloat));
  const at::Tensor total = at::stack(norms).norm(2);
  if (clipping.max_norm > 0) {
    // as torch.nn.utils.clip_grad_norm_: scale by max_norm / (norm + 1e-6), never up
    const at::Tensor scale = at::clamp_max(clipping.max_norm / (total + 1e-6), 1.0);
    for (at::Tensor& g : grads) g.detach().mul_(scale.to(g.scalar_type()));
  } else {
    for (at::Tensor& g : grads) g.detach().clamp_(-clipping.max_value, clipping.max_value);
  }
  return total.item<double>();
}

}  // namespace fitscope
