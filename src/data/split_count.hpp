#pragma once
// Private: how many examples Keras's validation_split holds out, validated.

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace fitscope::detail {

inline int64_t held_out_count(int64_t size, double fraction) {
  if (!(fraction > 0.0 && fraction < 1.0)) {
    throw std::invalid_argument("validation split must be in (0, 1), got " + std::to_string(fraction));
  }
  const auto held_out = static_cast<int64_t>(std::floor(static_cast<double>(size) * fraction));
  if (held_out == 0 || held_out == size) {
    throw std::invalid_argument("validation split " + std::to_string(fraction) + " of " + std::to_string(size) +
                                " examples leaves an empty part");
  }
  return held_out;
}

}  // namespace fitscope::detail
