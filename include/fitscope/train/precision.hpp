#pragma once
/// Precision: the number format of the forward pass. bfloat16 runs it under libtorch's autocast for the
/// batch's device, the CPU or CUDA (matrix products and convolutions in bfloat16, the ops that need
/// range in float32, as autocast's lists say) while the weights, gradients, optimizer state and the
/// loss stay float32: Lightning's "bf16-mixed". On a CPU, faster only with bfloat16 instructions
/// (AVX512-BF16, AMX); elsewhere libtorch converts in software.

#include <ATen/core/Tensor.h>

#include <string>

#include "fitscope/models/model.hpp"

namespace fitscope {

enum class Precision { float32, bfloat16 };

/// "32" or "bf16" (the CLI's --precision).
std::string precision_name(Precision precision);
/// The inverse; throws std::invalid_argument naming the value and the names expected.
Precision parse_precision(const std::string& name);

/// `model`'s outputs for `inputs` in `precision`, as float32 tensors: under bfloat16 autocast (on the
/// inputs' device) for Precision::bfloat16, so a loss on them is computed in float32. Throws
/// std::invalid_argument for bfloat16 on a device other than the CPU or CUDA.
at::Tensor forward_in(Model& model, const at::Tensor& inputs, Precision precision);

/// Whether this CPU has bfloat16 instructions (avx512_bf16 or amx_bf16 in /proc/cpuinfo).
bool cpu_has_bf16_instructions();

}  // namespace fitscope
