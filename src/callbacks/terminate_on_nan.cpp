#include "fitscope/callbacks/terminate_on_nan.hpp"

#include <cmath>
#include <iostream>
#include <stdexcept>
#include <string>


namespace fitscope {

void TerminateOnNaN::on_train_batch_end(int64_t batch, Logs& logs) {
  const auto loss = logs.get("loss");
  if (!loss || std::isfinite(*loss)) return;
  const std::string what = "the loss of batch " + std::to_string(batch) + " (global step " +
                           std::to_string(context().global_step()) + ") is " + std::to_string(*loss) +
                           ", not a finite number: the training diverged (TerminateOnNaN)";
  if (raise_error_) throw std::runtime_error(what);
  context().warn(what + "; stopping");
  context().request_stop();
}

}  // namespace fitscope
