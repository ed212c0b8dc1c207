#include "fitscope/checkpoint/weights_export.hpp"

#include <ATen/ATen.h>
#include <ATen/core/Dict.h>
#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/export.h>
#include <torch/csrc/jit/serialization/pickler.h>

#include <fstream>
#include <iterator>
#include <stdexcept>

#include "fitscope/io/atomic_file.hpp"
#include "fitscope/io/buffered_append.hpp"
#include "fitscope/io/file_system.hpp"
#include "pickle_archive.hpp"

namespace fitscope {

void write_weights(const NamedTensors& state, const ByteSink& out) {
  c10::Dict<std::string, at::Tensor> weights;
  for (const auto& [name, tensor] : state) weights.insert(name, tensor.detach().to(at::kCPU).contiguous());
  // torch::pickle_save's archive, but with the dict untagged: a type tag is a call of
  // torch.jit._pickle.restore_type_tag, which torch.load(weights_only=True) refuses
  write_pickle_archive(c10::IValue(weights), /*tag_aggregates=*/false, out);
}

std::string weights_pickle(const NamedTensors& state) {
  std::string archive;
  write_weights(state, [&](std::string_view bytes) { archive.append(bytes); });
  return archive;
}

void write_weights(const NamedTensors& state, WritableFile& file) {
  BufferedAppend out(file);
  write_weights(state, std::ref(out));
  out.flush();
}

void save_weights(const NamedTensors& state, const std::string& path) {
  write_atomically(*posix_file_system(), path, [&](WritableFile& file) { write_weights(state, file); });
}

NamedTensors load_weights(const std::string& path) {
  std::string bytes;
  try {
    bytes = read_whole_file(path, "torch.save's or fitscope's weights");
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("weights file ") + e.what());
  }
  NamedTensors weights;
  try {
    check_pickle_archive(bytes);
    const c10::IValue value = torch::jit::pickle_load(std::vector<char>(bytes.begin(), bytes.end()));
    if (!value.isGenericDict()) throw std::invalid_argument("it holds a " + value.tagKind() + ", not a dict");
    for (const auto& entry : value.toGenericDict()) {
      if (!entry.key().isString() || !entry.value().isTensor()) throw std::invalid_argument("it holds an entry that is not name -> tensor");
      weights.emplace_back(entry.key().toStringRef(), entry.value().toTensor());
    }
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("weights file " + path + ": " + e.what());
  } catch (const c10::Error& e) {
    throw std::invalid_argument("weights file " + path + ": not a weights archive (" + e.what_without_backtrace() + ")");
  }
  return weights;
}

}  // namespace fitscope
