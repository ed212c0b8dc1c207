#pragma once
/// The weights-only export `model.weights.pt`: the model's parameters and buffers as a name -> tensor
/// dict in the format of torch::pickle_save, which Python's `torch.load` reads. Tensors are copied to
/// the CPU first. Written atomically (temp file, fsync, rename).

#include <string>

#include "fitscope/train/model.hpp"

namespace fitscope {

/// The bytes of the export.
std::string weights_pickle(Model& model);
/// Writes the export to `path`; throws std::runtime_error naming the path on I/O errors.
void save_weights(Model& model, const std::string& path);

}  // namespace fitscope
