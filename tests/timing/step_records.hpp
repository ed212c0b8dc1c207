#pragma once
// A StepRecord made by hand for the tests of what consumes records (statistics, steps.csv): its
// forward, data_wait and other phases, 32 samples.

#include <cstddef>
#include <cstdint>

#include "fitscope/timing/step_clock.hpp"

namespace fitscope {

inline StepRecord record(int64_t forward_ns, int64_t data_ns, int64_t other_ns, int64_t batch = 0) {
  StepRecord r;
  r.batch = batch;
  r.samples = 32;
  r.phase_ns[static_cast<std::size_t>(Phase::forward)] = forward_ns;
  r.phase_ns[static_cast<std::size_t>(Phase::data_wait)] = data_ns;
  r.phase_ns[static_cast<std::size_t>(Phase::other)] = other_ns;
  r.step_ns = forward_ns + data_ns + other_ns;
  return r;
}

}  // namespace fitscope
