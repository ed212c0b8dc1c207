#pragma once
// Private: the report's building blocks. CSV rows streamed (steps.csv) or read into a table
// (metrics.csv), JSON read with a bounded depth, number and percentage formatting (one rounding rule),
// and the self-contained HTML page with its style. Used by html_report.cpp; pure functions.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace fitscope::report {

using nlohmann::json;

/// A numeric CSV with a header line (steps.csv, metrics.csv); text columns are kept as NaN.
struct Table {
  std::vector<std::string> columns;
  std::vector<std::vector<double>> rows;

  /// The index of column `name`, or -1.
  int column(const std::string& name) const {
    for (std::size_t i = 0; i < columns.size(); ++i) {
      if (columns[i] == name) return static_cast<int>(i);
    }
    return -1;
  }
  std::vector<double> values(int c) const;
};

/// The whole file; std::invalid_argument naming it when it cannot be read.
std::string read_text(const std::filesystem::path& path);
/// A Table (for the small CSVs: metrics.csv); throws as detail::for_each_csv_row (io/detail/csv_rows.hpp).
Table read_table(const std::filesystem::path& path);
/// JSON nested at most 64 deep; std::invalid_argument naming the file otherwise.
json read_json(const std::filesystem::path& path);

std::string fixed(double v, int digits = 3);
/// svg::format_percent: the report's one rounding rule.
std::string percent(double share);
/// "1 worker", "2 workers".
std::string count_of(int64_t n, const std::string& noun);
/// A value of a JSON object as text (not escaped), or "-" when absent.
std::string field(const json& j, const char* key);
/// A number of a JSON object, or `fallback` when absent or not a number.
double number(const json& j, const char* key, double fallback = 0);


/// Escaped text whose flag names (--workers, --callback-mode) never break across lines.
std::string with_unbroken_flags(const std::string& text);
/// The self-contained page: no script, no link, its style inline.
std::string page(const std::string& title, const std::string& body);

/// The sweep's whole page from its sweep.json at `path`, in `directory` (sweep_page.cpp).
std::string sweep_page(const std::filesystem::path& path, const std::string& directory);

}  // namespace fitscope::report
