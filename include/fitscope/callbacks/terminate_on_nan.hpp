#pragma once
/// TerminateOnNaN: Keras's TerminateOnNaN. Stops training after a batch whose loss is NaN or infinite,
/// or, with `raise_error`, fails the run with a std::runtime_error naming the batch. Reads the step's
/// loss (TrainingContext::step_loss), not the batch logs, so it costs no metric computation: one scalar
/// read per step on the CPU; on a GPU, where that read waits for the device, every 16th step (the
/// loss of a diverged run stays non-finite). Changes training: runs on the training thread.

#include "fitscope/callbacks/callback.hpp"

namespace fitscope {

class TerminateOnNaN : public Callback {
 public:
  CallbackTraits traits() const override {
    CallbackTraits t;
    t.changes_training = true;
    t.changes_weights = false;
    t.reads_batch_logs = false;
    return t;
  }
  explicit TerminateOnNaN(bool raise_error = false) : raise_error_(raise_error) {}
  void on_train_batch_end(int64_t batch, Logs& logs) override;

 private:
  bool raise_error_;
};

}  // namespace fitscope
