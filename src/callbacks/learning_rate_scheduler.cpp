#include "fitscope/callbacks/learning_rate_scheduler.hpp"

#include "fitscope/train/trainer.hpp"

namespace fitscope {

void LearningRateScheduler::on_epoch_begin(int64_t epoch, const Logs&) {
  trainer().set_learning_rate(schedule_(epoch, trainer().learning_rate()));
}

}  // namespace fitscope
