#include "fitscope/train/precision.hpp"

#include <ATen/autocast_mode.h>
#include <torch/version.h>

#include <fstream>
#include <stdexcept>
#include <string>

namespace fitscope {
namespace {

// libtorch 2.4 names the CPU's autocast state by device; 1.13 has functions of its own for it
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
bool cpu_autocast_enabled() { return at::autocast::is_autocast_enabled(at::kCPU); }
at::ScalarType cpu_autocast_dtype() { return at::autocast::get_autocast_dtype(at::kCPU); }
void set_cpu_autocast(bool enabled, at::ScalarType dtype) {
  at::autocast::set_autocast_enabled(at::kCPU, enabled);
  at::autocast::set_autocast_dtype(at::kCPU, dtype);
}
#else
bool cpu_autocast_enabled() { return at::autocast::is_cpu_enabled(); }
at::ScalarType cpu_autocast_dtype() { return at::autocast::get_autocast_cpu_dtype(); }
void set_cpu_autocast(bool enabled, at::ScalarType dtype) {
  at::autocast::set_cpu_enabled(enabled);
  at::autocast::set_autocast_cpu_dtype(dtype);
}
#endif

/// CPU autocast to bfloat16 for its lifetime; what was set before comes back after, and the cast
/// weights are dropped when the outermost autocast region ends (as torch.autocast's exit does).
class CpuAutocast {
 public:
  CpuAutocast() : was_enabled_(cpu_autocast_enabled()), was_dtype_(cpu_autocast_dtype()) {
    set_cpu_autocast(true, at::kBFloat16);
    at::autocast::increment_nesting();
  }
  ~CpuAutocast() {
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    set_cpu_autocast(was_enabled_, was_dtype_);
  }
  CpuAutocast(const CpuAutocast&) = delete;
  CpuAutocast& operator=(const CpuAutocast&) = delete;

 private:
  bool was_enabled_;
  at::ScalarType was_dtype_;
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
