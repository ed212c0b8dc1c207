#pragma once
// Private: how many examples Keras's validation_split holds out, validated.

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>

namespace fitscope::detail {

/// `source` (the data set's, e.g. "csv:train.csv") names it in the error.
inline int64_t held_out_count(int64_t size, double fraction, const std::string& source) {
  if (!(fraction > 0.0 && fraction < 1.0)) {
    throw std::invalid_argument("validation split must be in (0, 1), got " + std::to_string(fraction));
  }
  const auto held_out = static_cast<int64_t>(std::floor(static_cast<double>(size) * fraction));
  if (held_out == 0 || held_out == size) {
    char shown[32];
    std::snprintf(shown, sizeof shown, "%g", fraction);
    throw std::invalid_argument(source + ": a validation split of " + shown + " of its " + std::to_string(size) +
                                (size == 1 ? " example" : " examples") + " leaves " +
                                (held_out == 0 ? "no example to validate on" : "no example to train on") +
                                " (expected more examples, or another split)");
  }
  return held_out;
}

}  // namespace fitscope::detail
