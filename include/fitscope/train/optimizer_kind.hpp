#pragma once
/// The optimizers a Trainer builds (libtorch's), by name as on the command line.

#include <string>

namespace fitscope {

enum class OptimizerKind {
  adam,   ///< Adam; weight decay (default 0) added to the gradient (L2), as torch.optim.Adam
  adamw,  ///< AdamW: weight decay (default 0.01, PyTorch's) decoupled from the gradient
  sgd,    ///< SGD, with optional momentum and Nesterov momentum; weight decay (default 0) as L2
};

/// "adam" | "adamw" | "sgd".
std::string optimizer_name(OptimizerKind kind);
/// The kind named `name`; throws std::invalid_argument naming the value and the choices.
OptimizerKind parse_optimizer(const std::string& name);

}  // namespace fitscope
