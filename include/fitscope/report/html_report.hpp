#pragma once
/// report.html: a self-contained page (inline CSS and SVG, no script, no network) that answers "where
/// does my step time go?" from the files of a finished run directory: summary.json (required for a
/// training run), steps.csv and metrics.csv (used when present), or sweep.json for a sweep.
/// summary.json is read as a RunSummary: one of an older version or a broken one is rejected with the
/// key that is missing. Pure function of the files; thread-safe.

#include <string>

namespace fitscope {

/// The files a report is made from (RunDirectory::report_sources() names a run's).
struct ReportSources {
  std::string directory;  ///< the run's or sweep's directory, as the page and the messages show it
  std::string summary;    ///< a run's summary.json
  std::string steps;      ///< its steps.csv, used when it exists
  std::string metrics;    ///< its metrics.csv, used when it exists
  std::string sweep;      ///< a sweep's sweep.json, used when there is no summary
};

/// The report of the run (or sweep) whose files are `files`. Throws std::invalid_argument naming the
/// file when the directory does not exist, neither summary nor sweep does, or a file is malformed.
std::string html_report(const ReportSources& files);

/// Writes html_report(files) to `out` atomically (through a link, in place on a FIFO or a device).
void write_html_report(const ReportSources& files, const std::string& out);

}  // namespace fitscope
