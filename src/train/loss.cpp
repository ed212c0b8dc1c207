#include "fitscope/train/loss.hpp"

#include <torch/nn/functional/loss.h>

#include <stdexcept>

namespace fitscope {

at::Tensor compute_loss(Loss loss, const at::Tensor& outputs, const at::Tensor& targets) {
  switch (loss) {
    case Loss::cross_entropy: return torch::nn::functional::cross_entropy(outputs, targets);
    case Loss::mean_squared_error:
      return torch::nn::functional::mse_loss(outputs, targets.to(outputs.scalar_type()).view_as(outputs));
  }
  throw std::invalid_argument("unknown loss");
}

Loss parse_loss(const std::string& name) {
  if (name == "cross_entropy") return Loss::cross_entropy;
  if (name == "mse" || name == "mean_squared_error") return Loss::mean_squared_error;
  throw std::invalid_argument("unknown loss '" + name + "' (expected cross_entropy or mse)");
}

}  // namespace fitscope
