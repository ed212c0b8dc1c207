#pragma once
/// The built-in losses, on the model's raw outputs (logits for the classification losses):
/// cross-entropy against class indices, with optional label smoothing and class weights; and the
/// element-wise losses mean squared error, mean absolute error, Huber and binary cross-entropy on
/// logits, against targets of the outputs' shape (class indices against several outputs are taken as
/// one-hot vectors).

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

namespace fitscope {

enum class Loss {
  cross_entropy,                     ///< "cross-entropy": softmax cross-entropy on logits
  mean_squared_error,                ///< "mse"
  mean_absolute_error,               ///< "mae"
  huber,                             ///< "huber": squared below LossOptions::huber_delta, linear above
  binary_cross_entropy_with_logits,  ///< "bce-with-logits": sigmoid cross-entropy per output
};

struct LossOptions {
  /// Cross-entropy only: the target is (1 - s) on the class plus s / classes everywhere (Keras's and
  /// PyTorch's label_smoothing), s in [0, 1).
  double label_smoothing = 0;
  /// Cross-entropy only: each example's loss times its class's weight, then the mean over the batch
  /// (Keras's class_weight; empty = all 1). One weight per class, each >= 0.
  std::vector<double> class_weights;
  double huber_delta = 1.0;  ///< Huber's threshold (> 0)

  /// Throws std::invalid_argument naming the field for a value out of range, or for label smoothing
  /// or class weights with a loss other than cross-entropy.
  void validate(Loss loss) const;
};

/// The batch's mean loss. Throws std::invalid_argument when the targets do not fit the outputs (class
/// weights of another count than the outputs' classes, shapes that differ).
at::Tensor compute_loss(Loss loss, const at::Tensor& outputs, const at::Tensor& targets, const LossOptions& options = {});
/// "cross-entropy" | "mse" | "mae" | "huber" | "bce-with-logits" (underscores accepted too, and the
/// long names "mean_squared_error", "mean_absolute_error"); throws std::invalid_argument naming the
/// value and the choices.
Loss parse_loss(const std::string& name);
/// The name parse_loss reads.
std::string loss_name(Loss loss);

}  // namespace fitscope
