#include "fitscope/train/precision.hpp"

#include <ATen/autocast_mode.h>
#include <torch/version.h>

#include <fstream>
#include <stdexcept>
#include <string>

namespace fitscope {
namespace {

// libtorch 2.4 names autocast's state by device; 1.13 has functions of its own for the CPU and for CUDA
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
bool autocast_enabled(c10::DeviceType d) { return at::autocast::is_autocast_enabled(d); }
at::ScalarType autocast_dtype(c10::DeviceType d) { return at::autocast::get_autocast_dtype(d); }
void set_autocast(c10::DeviceType d, bool enabled, at::ScalarType dtype) {
  at::autocast::set_autocast_enabled(d, enabled);
  at::autocast::set_autocast_dtype(d, dtype);
}
#else
bool autocast_enabled(c10::DeviceType d) { return d == c10::kCPU ? at::autocast::is_cpu_enabled() : at::autocast::is_enabled(); }
at::ScalarType autocast_dtype(c10::DeviceType d) {
  return d == c10::kCPU ? at::autocast::get_autocast_cpu_dtype() : at::autocast::get_autocast_gpu_dtype();
}
void set_autocast(c10::DeviceType d, bool enabled, at::ScalarType dtype) {
  if (d == c10::kCPU) {
    at::autocast::set_cpu_enabled(enabled);
    at::autocast::set_autocast_cpu_dtype(dtype);
  } else {
    at::autocast::set_enabled(enabled);
    at::autocast::set_autocast_gpu_dtype(dtype);
  }
}
#endif

/// Autocast to bfloat16 on `device` (the CPU or CUDA) for its lifetime; what was set before comes back
/// after, and the cast weights are dropped when the outermost autocast region ends (as torch.autocast's
/// exit does).
class Autocast {
 public:
  explicit Autocast(c10::DeviceType device)
      : device_(device), was_enabled_(autocast_enabled(device)), was_dtype_(autocast_dtype(device)) {
    set_autocast(device_, true, at::kBFloat16);
    at::autocast::increment_nesting();
  }
  ~Autocast() {
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    set_autocast(device_, was_enabled_, was_dtype_);
  }
  Autocast(const Autocast&) = delete;
  Autocast& operator=(const Autocast&) = delete;

 private:
  c10::DeviceType device_;
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
  if (!inputs.device().is_cpu() && !inputs.device().is_cuda()) {
    throw std::invalid_argument("precision bf16 is bfloat16 autocast on the CPU or CUDA, but the batch is on " +
                                inputs.device().str() + " (expected device cpu or cuda, or precision 32)");
  }
  at::Tensor outputs;
  {
    Autocast autocast(inputs.device().type());
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
