#pragma once
/// report.html: a self-contained page (inline CSS and SVG, no script, no network) that answers "where
/// does my step time go?" from the files of a finished run directory: summary.json (required for a
/// training run), steps.csv and metrics.csv (used when present), or sweep.json for a sweep.
/// summary.json is read as a RunSummary: one of an older version or a broken one is rejected with the
/// key that is missing. Pure function of the files; thread-safe.

#include <string>

namespace fitscope {

/// The report of the run (or sweep) in `run_dir`. Throws std::invalid_argument naming the file when
/// neither summary.json nor sweep.json exists, or a file is malformed.
std::string html_report(const std::string& run_dir);

/// Writes html_report(run_dir) to `out` (default run_dir/report.html) atomically; returns the path.
std::string write_html_report(const std::string& run_dir, const std::string& out = "");

}  // namespace fitscope
