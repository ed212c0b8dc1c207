#pragma once
/// The seed CNN: Conv2D 32 3x3 + ReLU, MaxPool 2, Flatten, Dense 10, on [N, 1, 28, 28] inputs.
/// A torch::nn::Module; the usual libtorch ownership (Cnn is a shared handle). Not thread-safe.

#include <torch/nn/module.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

namespace fitscope::models {

struct CnnImpl : torch::nn::Module {
  explicit CnnImpl(int64_t image_size = 28, int64_t channels = 1, int64_t classes = 10);
  at::Tensor forward(const at::Tensor& x);

  torch::nn::Conv2d conv{nullptr};
  torch::nn::Linear dense{nullptr};
};
TORCH_MODULE(Cnn);

}  // namespace fitscope::models
