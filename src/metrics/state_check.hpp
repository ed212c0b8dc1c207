#pragma once
// The shared check of load_state() inputs (private to src/metrics).

#include <ATen/core/Tensor.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace fitscope {

inline void expect_state_size(const std::vector<at::Tensor>& state, std::size_t n, const std::string& metric) {
  if (state.size() != n) {
    throw std::invalid_argument(metric + " state has " + std::to_string(n) + " tensor" + (n == 1 ? "" : "s") +
                                ", got " + std::to_string(state.size()));
  }
}

}  // namespace fitscope
