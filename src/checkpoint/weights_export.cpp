#include "fitscope/checkpoint/weights_export.hpp"

#include <ATen/ATen.h>
#include <ATen/core/Dict.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include "fitscope/checkpoint/atomic_file.hpp"

namespace fitscope {

std::string weights_pickle(const NamedTensors& state) {
  c10::Dict<std::string, at::Tensor> weights;
  for (const auto& [name, tensor] : state) weights.insert(name, tensor.detach().to(at::kCPU).contiguous());
  const std::vector<char> bytes = torch::pickle_save(c10::IValue(weights));
  return std::string(bytes.begin(), bytes.end());
}

void save_weights(const NamedTensors& state, const std::string& path) { write_file_atomically(path, weights_pickle(state)); }

}  // namespace fitscope
