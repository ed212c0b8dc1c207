#pragma once
/// Batch: one collated batch of examples, inputs along dimension 0 and their targets.
/// A value type holding tensors (shared storage; copying a Batch does not copy the data).

#include <ATen/core/Tensor.h>

namespace fitscope {

struct Batch {
  at::Tensor inputs;   ///< [N, ...] model inputs
  at::Tensor targets;  ///< [N] class indices (int64) or [N, ...] regression targets

  int64_t size() const { return inputs.defined() ? inputs.size(0) : 0; }
};

}  // namespace fitscope
