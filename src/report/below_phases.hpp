#pragma once
// Private: the report's sections one level below the phases, from summary.json: the layers of the
// probed steps (time, share, operations and their rate against the measured peak) and the steps'
// tensor memory (per phase, held, growth). Used by html_report.cpp; pure functions.

#include <string>

#include "fitscope/summary/run_summary.hpp"

namespace fitscope::report {

/// "Layers": each layer's forward and backward on the probed steps, what no layer claims, and the
/// layers' rate against the machine's measured peak.
std::string layers_section(const RunSummary& s);
/// "Memory": what the steps held and allocated, phase by phase, the resident peak, and the growth of
/// what a step ends holding, with its interval and whether it is a leak.
std::string memory_section(const RunSummary& s);

}  // namespace fitscope::report
