#pragma once
/// The seed MLP: Dense 10 on 784 inputs (inputs are flattened first, so [N,1,28,28] works).
/// A torch::nn::Module; the usual libtorch ownership (Mlp is a shared handle). Not thread-safe.

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

namespace fitscope::models {

struct MlpImpl : torch::nn::Module {
  explicit MlpImpl(int64_t inputs = 784, int64_t classes = 10);
  at::Tensor forward(const at::Tensor& x);

  torch::nn::Linear dense{nullptr};
};
TORCH_MODULE(Mlp);

}  // namespace fitscope::models
