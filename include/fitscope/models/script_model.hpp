#pragma once
/// ScriptModel: a TorchScript module (scripted or traced in Python, `torch.jit.save`d) as a Model, so
/// it trains through the same loop as a C++ module: forward with one tensor in and one tensor out,
/// parameters, train/eval mode, device placement, named state. Shares the module (a TorchScript module
/// is a handle). Not thread-safe.

#include <torch/script.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "fitscope/models/model.hpp"

namespace fitscope {

class ScriptModel final : public Model {
 public:
  /// Throws std::invalid_argument when the module has no forward method taking one tensor.
  explicit ScriptModel(torch::jit::Module module, std::string name = "TorchScript module");

  /// Throws std::invalid_argument when forward returns something other than a tensor.
  at::Tensor forward(const at::Tensor& input) override;
  std::vector<at::Tensor> parameters() override;
  std::vector<std::pair<std::string, at::Tensor>> named_state() override;
  void train(bool on) override { module_.train(on); }
  void to(const c10::Device& device) override { module_.to(device); }

  torch::jit::Module& module() { return module_; }
  /// The module as a TorchScript archive (what `torch.jit.load` reads).
  std::string serialized() const;

 private:
  torch::jit::Module module_;
  std::string name_;
};

/// Loads a TorchScript archive; throws std::invalid_argument naming the file when it is missing, not
/// a zip archive, or a zip that is not TorchScript.
torch::jit::Module load_script_module(const std::string& path);

}  // namespace fitscope
