#include "fitscope/models/model_summary.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <algorithm>
#include <cstdio>
#include <set>

#include "fitscope/models/model.hpp"

namespace fitscope {
namespace {

/// 7850 -> "7,850".
std::string grouped(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

/// Keras's size beside a count: 4 bytes a parameter.
std::string bytes_of(int64_t parameters) {
  char text[32];
  const double bytes = 4.0 * static_cast<double>(parameters);
  if (bytes < 1024) std::snprintf(text, sizeof text, "%.2f B", bytes);
  else if (bytes < 1024.0 * 1024) std::snprintf(text, sizeof text, "%.2f KB", bytes / 1024);
  else if (bytes < 1024.0 * 1024 * 1024) std::snprintf(text, sizeof text, "%.2f MB", bytes / 1024 / 1024);
  else std::snprintf(text, sizeof text, "%.2f GB", bytes / 1024 / 1024 / 1024);
  return text;
}

std::string shape_text(at::IntArrayRef sizes) {
  std::string s = "[";
  for (std::size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + "]";
}

}  // namespace

ModelSummary summarize_model(Model& model, const std::vector<int64_t>& example_shape, c10::Device device) {
  ModelSummary s;
  std::set<const void*> trainable;
  for (const at::Tensor& p : model.parameters()) trainable.insert(p.unsafeGetTensorImpl());
  for (const auto& [name, tensor] : model.named_state()) {
    const std::size_t dot = name.rfind('.');
    const std::string layer = dot == std::string::npos ? "" : name.substr(0, dot);
    const std::string own = dot == std::string::npos ? name : name.substr(dot + 1);
    auto row = std::find_if(s.layers.begin(), s.layers.end(), [&](const LayerSummary& l) { return l.name == layer; });
    if (row == s.layers.end()) row = s.layers.insert(s.layers.end(), LayerSummary{layer, {}, 0, 0});
    row->tensors.push_back(own + " " + shape_text(tensor.sizes()));
    if (trainable.count(tensor.unsafeGetTensorImpl())) {
      row->parameters += tensor.numel();
      s.trainable += tensor.numel();
    } else if (tensor.is_floating_point()) {
      row->non_trainable += tensor.numel();
      s.non_trainable += tensor.numel();
    }
  }
  if (!example_shape.empty()) {
    std::vector<int64_t> batch = {1};
    batch.insert(batch.end(), example_shape.begin(), example_shape.end());
    try {
      torch::NoGradGuard no_grad;
      model.train(false);
      const at::Tensor out = model.forward(at::zeros(batch, at::TensorOptions().device(device)));
      s.output_shape.assign(out.sizes().begin() + 1, out.sizes().end());
    } catch (const std::exception&) {
      s.output_shape.clear();  // the fit names a model that cannot take the examples; here it is only not known
    }
    model.train(true);
  }
  return s;
}

std::string format_model_summary(const ModelSummary& s, const std::string& name) {
  std::size_t name_width = 5, tensors_width = 10;
  std::vector<std::string> tensor_texts;
  for (const LayerSummary& l : s.layers) {
    std::string t;
    for (const std::string& part : l.tensors) t += (t.empty() ? "" : ", ") + part;
    tensor_texts.push_back(t);
    name_width = std::max(name_width, l.name.empty() ? 6 : l.name.size());
    tensors_width = std::max(tensors_width, t.size());
  }
  tensors_width = std::min<std::size_t>(tensors_width, 60);
  char line[512];
  std::string out = "Model: \"" + name + "\"";
  if (!s.output_shape.empty()) out += ", output " + shape_text(s.output_shape) + " an example";
  out += "\n";
  std::snprintf(line, sizeof line, "%-*s  %-*s  %12s\n", static_cast<int>(name_width), "Layer", static_cast<int>(tensors_width),
                "Parameters", "Param #");
  out += line;
  for (std::size_t i = 0; i < s.layers.size(); ++i) {
    const LayerSummary& l = s.layers[i];
    std::string t = tensor_texts[i];
    if (t.size() > tensors_width) t = t.substr(0, tensors_width - 3) + "...";
    std::snprintf(line, sizeof line, "%-*s  %-*s  %12s\n", static_cast<int>(name_width), l.name.empty() ? "(root)" : l.name.c_str(),
                  static_cast<int>(tensors_width), t.c_str(), grouped(l.parameters + l.non_trainable).c_str());
    out += line;
  }
  out += "Total params: " + grouped(s.total()) + " (" + bytes_of(s.total()) + ")\n";
  out += "Trainable params: " + grouped(s.trainable) + " (" + bytes_of(s.trainable) + ")\n";
  out += "Non-trainable params: " + grouped(s.non_trainable) + " (" + bytes_of(s.non_trainable) + ")\n";
  return out;
}

}  // namespace fitscope
