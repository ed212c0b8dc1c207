#pragma once
/// compare_runs: finished run directories (A, or several runs of A's settings, and B) read into a
/// Comparison (summary/comparison.hpp, which says the method): steps.csv's measured steps (after each
/// rank's warm-up rows: the chief's rows for the step and its phases, every rank's phases),
/// summary.json's callbacks, choices and verdict, config.toml's settings. Reads each file once,
/// streaming steps.csv: memory independent of the runs' length. Thread-safe.

#include <string>
#include <vector>

#include "fitscope/summary/comparison.hpp"

namespace fitscope {

struct CompareOptions {
  ComparisonOptions comparison;
  /// Compare runs of different models or data as well (refused otherwise: their step times differ for
  /// reasons no part of the step names).
  bool force = false;
};

/// One run directory's series (`segments` stretches). Throws std::invalid_argument naming the file when
/// summary.json, steps.csv or config.toml is missing or malformed.
RunSeries read_run_series(const std::string& directory, int segments);

/// Run B (`b`) against run A (`a`). Throws as read_run_series, and std::invalid_argument naming both
/// runs' values when they trained different models or on different data, unless `options.force`.
Comparison compare_runs(const std::string& a, const std::string& b, const CompareOptions& options = {});

/// Runs of A's settings against runs of B's, one or more directories each (summary/comparison.hpp: the
/// prediction interval of A's runs against one B, Welch's t over the runs' means with two or more on
/// each side; make them in turn, A1 B1 A2 B2 ...). Throws as above, and std::invalid_argument naming the
/// setting and both directories when the runs of one side differ in a setting of their config.toml
/// (they are not repeats of one setting, whatever `options.force` says).
Comparison compare_runs(const std::vector<std::string>& a, const std::vector<std::string>& b, const CompareOptions& options = {});

}  // namespace fitscope
