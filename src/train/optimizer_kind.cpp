#include "fitscope/train/optimizer_kind.hpp"

#include <stdexcept>

namespace fitscope {

std::string optimizer_name(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::adam: return "adam";
    case OptimizerKind::adamw: return "adamw";
    case OptimizerKind::sgd: return "sgd";
  }
  return "unknown";
}

OptimizerKind parse_optimizer(const std::string& name) {
  for (OptimizerKind k : {OptimizerKind::adam, OptimizerKind::adamw, OptimizerKind::sgd}) {
    if (name == optimizer_name(k)) return k;
  }
  throw std::invalid_argument("unknown optimizer '" + name + "' (expected adam, adamw or sgd)");
}

}  // namespace fitscope
