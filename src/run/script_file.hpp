#pragma once
// Private to run/: whether a model spec (RunSpec::model) names a TorchScript file rather than a seed model.

#include <string>

namespace fitscope {

inline bool is_script_file(const std::string& model) { return model.size() > 3 && model.substr(model.size() - 3) == ".pt"; }

}  // namespace fitscope
