#include "fitscope/models/cnn.hpp"

#include <torch/nn/functional/activation.h>
#include <torch/nn/functional/pooling.h>

namespace fitscope::models {

CnnImpl::CnnImpl(int64_t image_size, int64_t channels, int64_t classes)
    : conv(register_module("conv", torch::nn::Conv2d(torch::nn::Conv2dOptions(channels, 32, 3)))),
      dense(register_module(
          "dense", torch::nn::Linear(32 * ((image_size - 2) / 2) * ((image_size - 2) / 2), classes))) {}

at::Tensor CnnImpl::forward(const at::Tensor& x) {
  auto h = torch::nn::functional::relu(conv(x));
  h = torch::nn::functional::max_pool2d(h, torch::nn::functional::MaxPool2dFuncOptions(2));
  return dense(h.flatten(1));
}

}  // namespace fitscope::models
