#pragma once
/// `fitscope compare RUN_A [RUN_A ...] RUN_B [RUN_B ...]`: where run B's step time differs from run A's, with its confidence
/// (run/compare_runs.hpp, summary/comparison.hpp); its options, filled from argv by main.cpp.

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "fitscope/run/compare_runs.hpp"

namespace fitscope::cli {

struct CompareCommandOptions {
  std::vector<std::string> runs;      ///< RUN_A ... RUN_B ...: A's runs, then B's
  std::optional<int> runs_of_a;       ///< --runs-of-a N: the first N are A's (default: all but the last)
  std::string json, html;             ///< --json FILE, --html FILE (empty: not written)
  std::optional<double> fail_above;   ///< --fail-above PCT
  CompareOptions compare;             ///< --force, --confidence
};

/// Prints the comparison to `out` (fitted to the terminal's width), writes the files asked for, and
/// returns the exit status (fewer than two runs: std::invalid_argument): 1 when --fail-above is given and B is slower than A by more than it at the
/// interval's low end (the message on `err`), else 0. Throws std::invalid_argument for a directory
/// that is not a finished run and for runs of different models or data without --force.
int run_compare(const CompareCommandOptions& o, std::ostream& out, std::ostream& err);

}  // namespace fitscope::cli
