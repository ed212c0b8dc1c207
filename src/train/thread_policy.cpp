#include "fitscope/train/thread_policy.hpp"

#include <ATen/Parallel.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <thread>

namespace fitscope {

int64_t default_threads(int64_t processes) {
  const auto cores = static_cast<int64_t>(std::thread::hardware_concurrency());
  return std::max<int64_t>(1, cores / std::max<int64_t>(processes, 1) - 1);
}

int64_t apply_threads(int64_t threads) {
  if (threads < 1) throw std::invalid_argument("threads must be >= 1, got " + std::to_string(threads));
  at::set_num_threads(static_cast<int>(threads));
  try {
    at::set_num_interop_threads(1);
  } catch (const std::exception&) {
    // the inter-op pool can be sized once per process, before first use; keep what is there
  }
  return at::get_num_threads();
}

}  // namespace fitscope
