#include "fitscope/callbacks/terminate_on_nan.hpp"

#include <cmath>
#include <iostream>
#include <stdexcept>
#include <string>


namespace fitscope {

void TerminateOnNaN::on_train_batch_end(int64_t batch, Logs& logs) {
  const auto loss = logs.get("loss");
  if (loss && !std::isfinite(*loss)) {
    if (raise_error_) {
      throw std::runtime_error("TerminateOnNaN: batch " + std::to_string(batch) + " has an invalid loss (" +
                               std::to_string(*loss) + ")");
    }
    std::cerr << "fitscope: batch " << batch << ": invalid loss " << *loss << ", terminating training\n";
    context().request_stop();
  }
}

}  // namespace fitscope
