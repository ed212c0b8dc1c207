#include "fitscope/callbacks/terminate_on_nan.hpp"

#include <ATen/core/Tensor.h>

#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>

namespace fitscope {

void TerminateOnNaN::on_train_batch_end(int64_t batch, Logs& logs) {
  std::optional<double> loss = logs.get("loss");  // a context that does not keep the step's loss
  if (const at::Tensor* step = context().step_loss(); step && step->defined()) {
    if (!step->is_cpu() && context().global_step() % 16 != 0) return;
    loss = step->item<double>();
  }
  if (!loss || std::isfinite(*loss)) return;
  const std::string what = "the loss of batch " + std::to_string(batch) + " (global step " +
                           std::to_string(context().global_step()) + ") is " + std::to_string(*loss) +
                           ", not a finite number: the training diverged (TerminateOnNaN)";
  if (raise_error_) throw std::runtime_error(what);
  context().warn(what + "; stopping");
  context().request_stop();
}

}  // namespace fitscope
