#pragma once
/// format_percent: a share (0..1) as a percentage, the one rounding rule of everything fitscope prints
/// or draws: the verdict's and the printout's sentences in whole percents ("12%"), the report's tables,
/// legends and tooltips with one decimal ("12.3%"). Plain function, no state.

#include <cstdio>
#include <string>

namespace fitscope::detail {

/// `share` x 100 rounded to `decimals` decimals (0 to 3), followed by "%".
inline std::string format_percent(double share, int decimals) {
  char text[48];
  std::snprintf(text, sizeof text, "%.*f%%", decimals, 100 * share);
  return text;
}

}  // namespace fitscope::detail
