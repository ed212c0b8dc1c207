#include "fitscope/checkpoint/weights_export.hpp"

#include <ATen/ATen.h>
#include <ATen/core/Dict.h>
#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/export.h>
#include <torch/csrc/jit/serialization/pickler.h>

#include "fitscope/checkpoint/atomic_file.hpp"

namespace fitscope {

std::string weights_pickle(const NamedTensors& state) {
  c10::Dict<std::string, at::Tensor> weights;
  for (const auto& [name, tensor] : state) weights.insert(name, tensor.detach().to(at::kCPU).contiguous());
  // torch::pickle_save's archive, but with the dict untagged: a type tag is a call of
  // torch.jit._pickle.restore_type_tag, which torch.load(weights_only=True) refuses
  std::string pickle;
  torch::jit::Pickler pickler([&](const char* data, size_t size) { pickle.append(data, size); }, nullptr, nullptr, nullptr,
                              nullptr, /*tag_aggregates=*/false);
  pickler.protocol();
  pickler.pushIValue(c10::IValue(weights));
  pickler.stop();
  std::string archive;
  {
    caffe2::serialize::PyTorchStreamWriter writer([&](const void* data, size_t size) {
      archive.append(static_cast<const char*>(data), size);
      return size;
    });
    torch::jit::writeArchiveAndTensors("data", pickle.data(), pickle.size(), pickler.tensorData(), writer);
  }
  return archive;
}

void save_weights(const NamedTensors& state, const std::string& path) { write_file_atomically(path, weights_pickle(state)); }

}  // namespace fitscope
