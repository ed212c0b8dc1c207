#pragma once
/// The comparison's page (`fitscope compare --html`): self-contained like report.html (inline CSS and
/// SVG, no script, no network): the headline (B slower, faster or no significant change, with its
/// interval, and the part it is attributed to), each part's change with its interval drawn and in a
/// table, the callbacks, the settings that differ, the two verdicts side by side and the method. Pure
/// function; thread-safe.

#include <string>

#include "fitscope/summary/comparison.hpp"

namespace fitscope {

std::string comparison_html(const Comparison& c);

/// Writes comparison_html(c) to `out` atomically (through a link, in place on a FIFO or a device).
void write_comparison_html(const Comparison& c, const std::string& out);

}  // namespace fitscope
