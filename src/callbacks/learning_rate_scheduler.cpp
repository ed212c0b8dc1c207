#include "fitscope/callbacks/learning_rate_scheduler.hpp"


namespace fitscope {

void LearningRateScheduler::on_epoch_begin(int64_t epoch, Logs&) {
  context().set_learning_rate(schedule_(epoch, context().learning_rate()));
}

void LearningRateScheduler::on_epoch_end(int64_t, Logs& logs) {
  logs.set("learning_rate", context().learning_rate());  // as Keras 3
}

}  // namespace fitscope
