#pragma once
/// The built-in losses: cross-entropy on logits against class indices, and mean squared error.

#include <ATen/core/Tensor.h>

#include <string>

namespace fitscope {

enum class Loss { cross_entropy, mean_squared_error };

/// The batch's mean loss.
at::Tensor compute_loss(Loss loss, const at::Tensor& outputs, const at::Tensor& targets);
/// "cross_entropy" | "mse"; throws std::invalid_argument naming the value and the choices.
Loss parse_loss(const std::string& name);

}  // namespace fitscope
