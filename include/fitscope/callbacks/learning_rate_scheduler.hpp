#pragma once
/// LearningRateScheduler: Keras's LearningRateScheduler. At each epoch's start sets the learning rate
/// to schedule(epoch, current lr) (finite, >= 0: a warm-up may start at 0), and adds `learning_rate`
/// to the epoch's logs (Keras 3). Changes training: runs on the training thread.

#include <functional>

#include "fitscope/callbacks/callback.hpp"

namespace fitscope {

class LearningRateScheduler : public Callback {
 public:
  CallbackTraits traits() const override {
    CallbackTraits t = CallbackTraits::acts_at_epoch_end();
    t.changes_weights = false;
    return t;
  }
  using Schedule = std::function<double(int64_t epoch, double lr)>;
  explicit LearningRateScheduler(Schedule schedule) : schedule_(std::move(schedule)) {}
  void on_epoch_begin(int64_t epoch, Logs& logs) override;
  void on_epoch_end(int64_t epoch, Logs& logs) override;

 private:
  Schedule schedule_;
};

}  // namespace fitscope
