#pragma once
/// The weights-only export `model.weights.pt`: the model's parameters and buffers as a name -> tensor
/// dict in the format of torch::pickle_save without its type tags, so Python's
/// `torch.load(path, weights_only=True)` (the default since PyTorch 2.6) reads it. Tensors are copied
/// to the CPU first. Written atomically (temp file, fsync, rename).

#include <ATen/core/Tensor.h>

#include <string>
#include <utility>
#include <vector>

#include "fitscope/io/file_system.hpp"

namespace fitscope {

/// A model's parameters and buffers by name (Model::named_state()).
using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

/// The bytes of the export.
std::string weights_pickle(const NamedTensors& state);
/// The same bytes streamed into `out`, each tensor's from its own storage (no copy of the weights).
void write_weights(const NamedTensors& state, const ByteSink& out);
/// The same streamed into `file` (through a BufferedAppend).
void write_weights(const NamedTensors& state, WritableFile& file);
/// Writes the export to `path`; throws std::runtime_error naming the path on I/O errors.
void save_weights(const NamedTensors& state, const std::string& path);
/// Reads an export (the name -> tensor dict of save_weights), in the file's order. Throws std::invalid_argument naming
/// the path for a file that is missing, not such an archive, or not a dict of tensors.
NamedTensors load_weights(const std::string& path);

}  // namespace fitscope
