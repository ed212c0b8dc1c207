#include "fitscope/callbacks/terminate_on_nan.hpp"

#include <cmath>
#include <iostream>
#include <stdexcept>
#include <string>

#include "fitscope/train/trainer.hpp"

namespace fitscope {

void TerminateOnNaN::on_train_batch_end(int64_t batch, const Logs& logs) {
  const auto loss = logs.get("loss");
  if (loss && !std::isfinite(*loss)) {
    if (raise_error_) {
      throw std::runtime_error("TerminateOnNaN: batch " + std::to_string(batch) + " has an invalid loss (" +
                               std::to_string(*loss) + ")");
    }
    std::cerr << "fitscope: batch " << batch << ": invalid loss " << *loss << ", terminating training\n";
    trainer().request_stop();
  }
}

}  // namespace fitscope
