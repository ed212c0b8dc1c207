#pragma once
/// LearningRateScheduler: Keras's LearningRateScheduler. At each epoch's start sets the learning rate
/// to schedule(epoch, current lr). Changes training: runs on the training thread.

#include <functional>

#include "fitscope/callbacks/callback.hpp"

namespace fitscope {

class LearningRateScheduler : public Callback {
 public:
  CallbackTraits traits() const override {
    CallbackTraits t;
    t.changes_training = true;
    t.stops_mid_epoch = false;
    t.reads_batch_logs = false;
    return t;
  }
  using Schedule = std::function<double(int64_t epoch, double lr)>;
  explicit LearningRateScheduler(Schedule schedule) : schedule_(std::move(schedule)) {}
  void on_epoch_begin(int64_t epoch, Logs& logs) override;

 private:
  Schedule schedule_;
};

}  // namespace fitscope
