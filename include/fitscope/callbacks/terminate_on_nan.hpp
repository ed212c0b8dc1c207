#pragma once
/// TerminateOnNaN: Keras's TerminateOnNaN. Stops training after a batch whose running loss is NaN or
/// infinite, or, with `raise_error`, fails the run with a std::runtime_error naming the batch. Reads
/// batch logs. Changes training: runs on the training thread.

#include "fitscope/callbacks/callback.hpp"

namespace fitscope {

class TerminateOnNaN : public Callback {
 public:
  CallbackTraits traits() const override {
    CallbackTraits t;
    t.changes_training = true;
    return t;
  }
  explicit TerminateOnNaN(bool raise_error = false) : raise_error_(raise_error) {}
  void on_train_batch_end(int64_t batch, Logs& logs) override;

 private:
  bool raise_error_;
};

}  // namespace fitscope
