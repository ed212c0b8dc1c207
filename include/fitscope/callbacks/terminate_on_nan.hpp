#pragma once
/// TerminateOnNaN: Keras's TerminateOnNaN. Stops training after a batch whose running loss is NaN or
/// infinite. Reads batch logs. Changes training: runs on the training thread.

#include "fitscope/callbacks/callback.hpp"

namespace fitscope {

class TerminateOnNaN : public Callback {
 public:
  bool changes_training() const override { return true; }
  void on_train_batch_end(int64_t batch, const Logs& logs) override;
};

}  // namespace fitscope
