#include "fitscope/models/mlp.hpp"

namespace fitscope::models {

MlpImpl::MlpImpl(int64_t inputs, int64_t classes)
    : dense(register_module("dense", torch::nn::Linear(inputs, classes))) {}

at::Tensor MlpImpl::forward(const at::Tensor& x) { return dense(x.flatten(1)); }

}  // namespace fitscope::models
