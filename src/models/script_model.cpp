#include "fitscope/models/script_model.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace fitscope {
namespace {

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace

ScriptModel::ScriptModel(torch::jit::Module module, std::string name) : module_(std::move(module)), name_(std::move(name)) {
  const auto method = module_.find_method("forward");
  if (!method) throw std::invalid_argument(name_ + " has no forward method (expected forward(self, x: Tensor) -> Tensor)");
  const auto& arguments = method->function().getSchema().arguments();
  // arguments[0] is self; then exactly one input without a default, a tensor
  int64_t required = 0;
  for (std::size_t i = 1; i < arguments.size(); ++i) required += arguments[i].default_value().has_value() ? 0 : 1;
  if (arguments.size() < 2 || required > 1 || arguments[1].type()->kind() != c10::TypeKind::TensorType) {
    throw std::invalid_argument(name_ + ": forward must take one tensor, its schema is " +
                                c10::toString(method->function().getSchema()) +
                                " (expected forward(self, x: Tensor) -> Tensor)");
  }
}

at::Tensor ScriptModel::forward(const at::Tensor& input) {
  c10::IValue out = module_.forward({input});
  if (!out.isTensor()) {
    throw std::invalid_argument(name_ + ": forward returned a " + out.tagKind() + ", expected a tensor");
  }
  return out.toTensor();
}

std::vector<at::Tensor> ScriptModel::parameters() {
  std::vector<at::Tensor> out;
  for (const at::Tensor& p : module_.parameters()) out.push_back(p);
  return out;
}

std::vector<std::pair<std::string, at::Tensor>> ScriptModel::named_state() {
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (const auto& p : module_.named_parameters()) out.emplace_back(p.name, p.value);
  for (const auto& b : module_.named_buffers()) out.emplace_back(b.name, b.value);
  return out;
}

std::string ScriptModel::serialized() const {
  std::ostringstream out;
  module_.save(out);
  return std::move(out).str();
}

torch::jit::Module load_script_module(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw std::invalid_argument(path + ": no such TorchScript file");
  }
  std::ifstream in(path, std::ios::binary);
  char magic[4] = {};
  in.read(magic, 4);
  if (in.gcount() < 4 || magic[0] != 'P' || magic[1] != 'K') {
    throw std::invalid_argument(path + ": not a TorchScript archive (not a zip file; expected a file written by "
                                       "torch.jit.save)");
  }
  try {
    return torch::jit::load(path);
  } catch (const c10::Error& e) {
    throw std::invalid_argument(path + ": not a TorchScript archive (a zip file that torch.jit.load cannot read: " +
                                first_line(e.what_without_backtrace()) + ")");
  }
}

std::shared_ptr<Model> make_model(torch::jit::Module module) {
  return std::make_shared<ScriptModel>(std::move(module));
}

}  // namespace fitscope
