#pragma once
/// Model: what the Trainer needs of a model (forward with one tensor in and one out, parameters,
/// train/eval mode, device placement, named state), so that a C++ torch::nn::Module and a TorchScript
/// module (ScriptModel) train through the same loop. ModuleModel adapts any module with
/// `at::Tensor forward(at::Tensor)`; make_model() wraps a module handle or a shared_ptr to one.
/// The adapter shares ownership of the module. Not thread-safe.

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace torch::jit {
struct Module;
}

namespace fitscope {

class Model {
 public:
  virtual ~Model() = default;
  virtual at::Tensor forward(const at::Tensor& input) = 0;
  /// Trainable parameters.
  virtual std::vector<at::Tensor> parameters() = 0;
  /// Parameters and buffers by name (what model.weights.pt holds).
  virtual std::vector<std::pair<std::string, at::Tensor>> named_state() = 0;
  /// Training (true) or evaluation (false) mode.
  virtual void train(bool on) = 0;
  /// Moves parameters and buffers.
  virtual void to(const c10::Device& device) = 0;
};

template <typename Impl>
class ModuleModel final : public Model {
 public:
  explicit ModuleModel(std::shared_ptr<Impl> module) : module_(std::move(module)) {}

  at::Tensor forward(const at::Tensor& input) override { return module_->forward(input); }
  std::vector<at::Tensor> parameters() override { return module_->parameters(); }
  std::vector<std::pair<std::string, at::Tensor>> named_state() override {
    std::vector<std::pair<std::string, at::Tensor>> out;
    for (const auto& p : module_->named_parameters()) out.emplace_back(p.key(), p.value());
    for (const auto& b : module_->named_buffers()) out.emplace_back(b.key(), b.value());
    return out;
  }
  void train(bool on) override { module_->train(on); }
  void to(const c10::Device& device) override { module_->to(device); }
  const std::shared_ptr<Impl>& module() const { return module_; }

 private:
  std::shared_ptr<Impl> module_;
};

/// Wraps a module handle (e.g. fitscope::models::Cnn) or a shared_ptr to a module.
template <typename Impl>
std::shared_ptr<Model> make_model(std::shared_ptr<Impl> module) {
  return std::make_shared<ModuleModel<Impl>>(std::move(module));
}
template <typename Impl>
std::shared_ptr<Model> make_model(torch::nn::ModuleHolder<Impl> module) {
  return std::make_shared<ModuleModel<Impl>>(module.ptr());
}
inline std::shared_ptr<Model> make_model(std::shared_ptr<Model> model) { return model; }
/// Wraps a TorchScript module (ScriptModel, in script_model.hpp, which callers include).
std::shared_ptr<Model> make_model(torch::jit::Module module);

}  // namespace fitscope
