#include "fitscope/train/precision.hpp"

#include <ATen/autocast_mode.h>
#include <torch/version.h>

#include <fstream>
#include <stdexcept>
#include <string>

namespace fitscope {
namespace {

/// CPU autocast to bfloat16 for its lifetime; what was set before comes back after, and the cast
/// weights are dropped when the outermost autocast region ends (as torch.autocast's exit does).
class CpuAutocast {
 public:
  CpuAutocast() {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    was_enabled_ = at::autocast::is_autocast_enabled(at::kCPU);
    was_dtype_ = at::autocast::get_autocast_dtype(at::kCPU);
    at::autocast::set_autocast_enabled(at::kCPU, true);
    at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
#else
    was_enabled_ = at::autocast::is_cpu_enabled();
    was_dtype_ = at::autocast::get_autocast_cpu_dtype();
    at::autocast::set_cpu_enabled(true);
    at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
#endif
    at::autocast::increment_nesting();
  }
  ~CpuAutocast() {
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    at::autocast::set_autocast_enabled(at::kCPU, was_enabled_);
    at::autocast::set_autocast_dtype(at::kCPU, was_dtype_);
#else
    at::autocast::set_cpu_enabled(was_enabled_);
    at::autocast::set_autocast_cpu_dtype(was_dtype_);
#endif
  }
  CpuAutocast(const CpuAutocast&) = delete;
  CpuAutocast& operator=(const CpuAutocast&) = delete;

 private:
  bool was_enabled_ = false;
  at::ScalarType was_dtype_ = at::kBFloat16;
};

}  // namespace

std::string precision_name(Precision precision) { return precision == Precision::bfloat16 ? "bf16" : "32"; }

Precision parse_precision(const std::string& name) {
  if (name == "32") return Precision::float32;
  if (name == "bf16") return Precision::bfloat16;
  throw std::invalid_argument("unknown precision '" + name + "' (expected 32 or bf16)");
}

at::Tensor forward_in(Model& model, const at::Tensor& inputs, Precision precision) {
  if (precision == Precision::float32) return model.forward(inputs);
  if (!inputs.device().is_cpu()) {
    throw std::invalid_argument("precision bf16 is bfloat16 autocast on the CPU, but the batch is on " + inputs.device().str() +
                                " (expected device cpu, or precision 32)");
  }
  at::Tensor outputs;
  {
    CpuAutocast autocast;
    outputs = model.forward(inputs);
  }
  return outputs.is_floating_point() && outputs.scalar_type() != at::kFloat ? outputs.to(at::kFloat) : outputs;
}

bool cpu_has_bf16_instructions() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) == 0) {
      return line.find(" avx512_bf16") != std::string::npos || line.find(" amx_bf16") != std::string::npos;
    }
  }
  return false;
}

}  // namespace fitscope
