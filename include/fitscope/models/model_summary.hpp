#pragma once
/// A model's summary, as Keras's model.summary() and Lightning's parameter table: its layers (each
/// module that holds parameters or buffers, by name, with their shapes and parameter count), the
/// output shape of one example, and the total, trainable and non-trainable counts (buffers such as
/// batch norm's running statistics count as non-trainable, as in Keras). The same for a C++ module and
/// a TorchScript one: it reads the model's named state, so a layer's type is not known.

#include <c10/core/Device.h>

#include <cstdint>
#include <string>
#include <vector>

namespace fitscope {

class Model;

struct LayerSummary {
  std::string name;                  ///< the module's path ("conv1", "features.0"); "" for the root's own
  std::vector<std::string> tensors;  ///< "weight [10, 784]", "bias [10]", ...
  int64_t parameters = 0;            ///< elements of its trainable tensors
  int64_t non_trainable = 0;         ///< elements of its floating-point buffers
};

struct ModelSummary {
  std::vector<LayerSummary> layers;   ///< in the model's order
  std::vector<int64_t> output_shape;  ///< of one example (batch dimension left out); empty = not known
  int64_t trainable = 0, non_trainable = 0;
  int64_t total() const { return trainable + non_trainable; }
};

/// `model`'s summary; with `example_shape` (one example's input, no batch dimension) the output shape
/// comes from one forward of zeros on `device` in evaluation mode, without gradients (the model is
/// left in training mode). A model whose forward fails on zeros gets no output shape.
ModelSummary summarize_model(Model& model, const std::vector<int64_t>& example_shape = {},
                             c10::Device device = c10::Device(c10::kCPU));

/// The summary as a table, Keras's way: "Layer | Parameters (shapes) | Param #", then
/// "Total params: 7,850 (30.66 KB)", "Trainable params: ...", "Non-trainable params: ...".
std::string format_model_summary(const ModelSummary& summary, const std::string& name = "model");

}  // namespace fitscope
