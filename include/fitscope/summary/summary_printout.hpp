#pragma once
/// The printout of a RunSummary at a run's end (what `fitscope train` prints), whole or in parts for
/// programs that print less. Pure functions; thread-safe.

#include <cstddef>
#include <string>

#include "fitscope/summary/run_summary.hpp"

namespace fitscope {

/// The printout at a run's end: threads and CPU, the step breakdown, the costliest callbacks and the
/// verdict, the ranks, the loader, the GPU, and where the wall time went. Its tables fit 80 columns;
/// its sentences are one line each, for wrap_to_width to fit the terminal.
std::string format_summary(const RunSummary& summary);

/// `text` with every line wider than `width` columns wrapped at its spaces, each continuation indented
/// two columns past the line's own indentation; a word wider than the line stays whole on a line of its
/// own (nothing is cut). Columns count UTF-8 characters. For a terminal: wrap_to_width(text,
/// terminal_columns()) (io/terminal.hpp).
std::string wrap_to_width(const std::string& text, std::size_t width);

/// Parts of the printout, for programs that print less.
std::string format_threads(const RunSummary& summary);
std::string format_breakdown(const RunSummary& summary);
std::string format_ranks(const RunSummary& summary);
std::string format_gpu(const RunSummary& summary);
std::string format_run_time(const RunSummary& summary);

}  // namespace fitscope
