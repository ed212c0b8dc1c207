#include "fitscope/train/loss.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace fitscope {
namespace {

constexpr Loss kAll[] = {Loss::cross_entropy, Loss::mean_squared_error, Loss::mean_absolute_error, Loss::huber,
                         Loss::binary_cross_entropy_with_logits};

/// The targets of an element-wise loss: of the outputs' shape and type; class indices against several
/// outputs become one-hot vectors.
at::Tensor elementwise_targets(const at::Tensor& outputs, const at::Tensor& targets) {
  if (outputs.dim() == 2 && outputs.size(1) > 1 && targets.dim() == 1 && !at::isFloatingType(targets.scalar_type())) {
    return at::one_hot(targets.to(at::kLong), outputs.size(1)).to(outputs.scalar_type());
  }
  if (targets.numel() != outputs.numel()) {
    throw std::invalid_argument("the targets " + c10::str(targets.sizes()) + " do not fit the outputs " +
                                c10::str(outputs.sizes()) + " of an element-wise loss");
  }
  return targets.to(outputs.scalar_type()).view_as(outputs);
}

/// Softmax cross-entropy over class indices, averaged, as one autograd node instead of two: the same
/// kernels as at::cross_entropy_loss in the same order (log-softmax, the negative log-likelihood, and
/// their backward kernels), so the same bits, with one node's bookkeeping less on every small step.
struct SoftmaxCrossEntropy : torch::autograd::Function<SoftmaxCrossEntropy> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& outputs, const at::Tensor& targets) {
    at::Tensor log_probabilities = at::_log_softmax(outputs, 1, false);
    auto [loss, total_weight] = at::nll_loss_forward(log_probabilities, targets, {}, at::Reduction::Mean, -100);
    ctx->save_for_backward({log_probabilities, targets, total_weight});
    return loss;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx, torch::autograd::variable_list grad) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor nll = at::nll_loss_backward(grad[0], saved[0], saved[1], {}, at::Reduction::Mean, -100, saved[2]);
    return {at::_log_softmax_backward_data(nll, saved[0], 1, saved[0].scalar_type()), at::Tensor()};
  }
};

/// Whether SoftmaxCrossEntropy computes this loss: a training step's float logits on the CPU against class
/// indices, without label smoothing.
bool one_node_applies(const at::Tensor& outputs, const at::Tensor& targets, const LossOptions& o) {
  return o.label_smoothing == 0 && outputs.requires_grad() && outputs.is_cpu() && outputs.scalar_type() == at::kFloat &&
         outputs.dim() == 2 && targets.dim() == 1 && targets.scalar_type() == at::kLong && targets.is_cpu();
}

at::Tensor cross_entropy(const at::Tensor& outputs, const at::Tensor& targets, const LossOptions& o) {
  if (o.class_weights.empty()) {
    if (one_node_applies(outputs, targets, o)) return SoftmaxCrossEntropy::apply(outputs, targets);
    return at::cross_entropy_loss(outputs, targets, {}, at::Reduction::Mean, -100, o.label_smoothing);
  }
  if (static_cast<int64_t>(o.class_weights.size()) != outputs.size(-1)) {
    throw std::invalid_argument("class weights: " + std::to_string(o.class_weights.size()) + " given, the model outputs " +
                                std::to_string(outputs.size(-1)) + " classes");
  }
  // Keras's class_weight: each example's loss times its class's weight, averaged over the batch
  const at::Tensor weights = at::tensor(o.class_weights, outputs.options().dtype(at::kDouble)).to(outputs.scalar_type());
  const at::Tensor each = at::cross_entropy_loss(outputs, targets, {}, at::Reduction::None, -100, o.label_smoothing);
  return (each * weights.index_select(0, targets.to(at::kLong))).mean();
}

}  // namespace

void LossOptions::validate(Loss loss) const {
  if (!(std::isfinite(label_smoothing) && label_smoothing >= 0 && label_smoothing < 1)) {
    throw std::invalid_argument("label smoothing must be in [0, 1), got " + std::to_string(label_smoothing));
  }
  for (double w : class_weights) {
    if (!(std::isfinite(w) && w >= 0)) throw std::invalid_argument("class weights must be finite and >= 0, got " + std::to_string(w));
  }
  if (!(std::isfinite(huber_delta) && huber_delta > 0)) {
    throw std::invalid_argument("Huber's delta must be a finite number > 0, got " + std::to_string(huber_delta));
  }
  if (loss != Loss::cross_entropy && (label_smoothing > 0 || !class_weights.empty())) {
    throw std::invalid_argument("label smoothing and class weights apply to the cross-entropy loss only, got " + loss_name(loss));
  }
}

at::Tensor compute_loss(Loss loss, const at::Tensor& outputs, const at::Tensor& targets, const LossOptions& options) {
  switch (loss) {
    case Loss::cross_entropy: return cross_entropy(outputs, targets, options);
    case Loss::mean_squared_error: return at::mse_loss(outputs, elementwise_targets(outputs, targets));
    case Loss::mean_absolute_error: return at::l1_loss(outputs, elementwise_targets(outputs, targets));
    case Loss::huber:
      return at::huber_loss(outputs, elementwise_targets(outputs, targets), at::Reduction::Mean, options.huber_delta);
    case Loss::binary_cross_entropy_with_logits:
      return at::binary_cross_entropy_with_logits(outputs, elementwise_targets(outputs, targets));
  }
  throw std::invalid_argument("unknown loss");
}

std::string loss_name(Loss loss) {
  switch (loss) {
    case Loss::cross_entropy: return "cross-entropy";
    case Loss::mean_squared_error: return "mse";
    case Loss::mean_absolute_error: return "mae";
    case Loss::huber: return "huber";
    case Loss::binary_cross_entropy_with_logits: return "bce-with-logits";
  }
  return "unknown";
}

Loss parse_loss(const std::string& name) {
  std::string dashed = name;
  std::replace(dashed.begin(), dashed.end(), '_', '-');
  if (dashed == "mean-squared-error") return Loss::mean_squared_error;
  if (dashed == "mean-absolute-error") return Loss::mean_absolute_error;
  for (Loss l : kAll) {
    if (dashed == loss_name(l)) return l;
  }
  throw std::invalid_argument("unknown loss '" + name + "' (expected cross-entropy, mse, mae, huber or bce-with-logits)");
}

}  // namespace fitscope
