#pragma once
/// The printout of a RunSummary at a run's end (what `fitscope train` prints), whole or in parts for
/// programs that print less. Pure functions; thread-safe.

#include <string>

#include "fitscope/summary/run_summary.hpp"

namespace fitscope {

/// The printout at a run's end: threads and CPU, the step breakdown, the costliest callbacks and the
/// verdict, the ranks, the loader, the GPU, and where the wall time went.
std::string format_summary(const RunSummary& summary);

/// Parts of the printout, for programs that print less.
std::string format_threads(const RunSummary& summary);
std::string format_breakdown(const RunSummary& summary);
std::string format_ranks(const RunSummary& summary);
std::string format_gpu(const RunSummary& summary);
std::string format_run_time(const RunSummary& summary);

}  // namespace fitscope
