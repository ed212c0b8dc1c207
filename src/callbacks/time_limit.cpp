#include "fitscope/callbacks/time_limit.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

namespace fitscope {

TimeLimit::TimeLimit(double seconds) {
  if (!(std::isfinite(seconds) && seconds > 0 && seconds < 1e9)) {
    throw std::invalid_argument("a time limit must be a number of seconds in (0, 1e9), got " + std::to_string(seconds));
  }
  limit_ = std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
}

CallbackTraits TimeLimit::traits() const {
  CallbackTraits t;
  t.changes_training = true;
  t.stops_mid_epoch = true;
  t.changes_weights = false;
  t.reads_batch_logs = false;
  return t;
}

void TimeLimit::on_train_begin(Logs&) { start_ = std::chrono::steady_clock::now(); }

void TimeLimit::on_train_batch_end(int64_t, Logs&) {
  if (std::chrono::steady_clock::now() - start_ >= limit_) context().request_stop();
}

}  // namespace fitscope
