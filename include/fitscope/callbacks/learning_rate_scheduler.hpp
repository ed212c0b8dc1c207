#pragma once
/// LearningRateScheduler: Keras's LearningRateScheduler. At each epoch's start sets the learning rate
/// to schedule(epoch, current lr). Changes training: runs on the training thread.

#include <functional>

#include "fitscope/callbacks/callback.hpp"

namespace fitscope {

class LearningRateScheduler : public Callback {
 public:
  bool changes_training() const override { return true; }
  bool stops_mid_epoch() const override { return false; }
  using Schedule = std::function<double(int64_t epoch, double lr)>;
  explicit LearningRateScheduler(Schedule schedule) : schedule_(std::move(schedule)) {}
  bool reads_batch_logs() const override { return false; }
  void on_epoch_begin(int64_t epoch, const Logs& logs) override;

 private:
  Schedule schedule_;
};

}  // namespace fitscope
