#pragma once
/// Gradient clipping before the optimizer step (Keras's global_clipnorm / clipvalue, Lightning's
/// gradient_clip_val with gradient_clip_algorithm "norm" / "value"): one of the two, as both frameworks
/// allow. In a data-parallel run it applies to the gradients averaged across ranks, so every rank clips
/// alike. Timed in the step's `optimizer` phase.

#include <ATen/core/Tensor.h>

#include <vector>

namespace fitscope {

struct GradientClipping {
  double max_norm = 0;   ///< scale all gradients so that their global L2 norm is at most this; 0 = off
  double max_value = 0;  ///< clamp every gradient element to [-max_value, max_value]; 0 = off

  bool enabled() const { return max_norm > 0 || max_value > 0; }
  /// Throws std::invalid_argument naming the field for a negative or non-finite value, or both set.
  void validate() const;
};

/// Clips the gradients of `parameters` (those without a gradient are skipped) in place. Returns their
/// global L2 norm before clipping (one device sync). Call with clipping enabled.
double clip_gradients(const std::vector<at::Tensor>& parameters, const GradientClipping& clipping);

}  // namespace fitscope
