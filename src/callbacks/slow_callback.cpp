#include "fitscope/callbacks/slow_callback.hpp"

#include <chrono>
#include <thread>

namespace fitscope {

void SlowCallback::on_train_batch_end(int64_t, Logs&) {
  std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms_));
}

}  // namespace fitscope
