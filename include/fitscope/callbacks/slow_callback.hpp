#pragma once
/// SlowCallback: a callback that costs `ms` milliseconds (sleeping, like slow I/O) on every
/// on_train_batch_end: seed 000's slow logging callback, reproducible with `--slow-callback-ms X`, to
/// see how the step suffers and how the warning, the verdict and async mode deal with it.

#include "fitscope/callbacks/callback.hpp"

namespace fitscope {

class SlowCallback : public Callback {
 public:
  explicit SlowCallback(double ms) : ms_(ms) {}
  CallbackTraits traits() const override {
    CallbackTraits t;
    t.reads_batch_logs = false;
    return t;
  }
  void on_train_batch_end(int64_t batch, Logs& logs) override;

 private:
  double ms_;
};

}  // namespace fitscope
