#pragma once
// Private: steps.csv read down to what the report draws, in memory bounded by the charts' points,
// whatever the run's length (a million steps read in a few MB): the file is streamed twice, once to
// count each rank's rows, once to sample them, keeping only a window of rows.

#include <cstddef>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace fitscope::report {

/// A column's value at every `stride`-th row (rows 0, stride, 2·stride, ...) with the p10, p50 and p90
/// of the `window` rows centred on it (fewer at the ends), computed as the rows stream past: only the
/// last `window` values are kept.
class RollingSample {
 public:
  RollingSample(std::size_t stride, std::size_t window);
  void push(double value);
  /// The rows at the end, whose windows the last rows closed. Call once, after the last push.
  void finish();

  std::vector<double> x, value, p10, p50, p90;

 private:
  void sample(std::size_t row);

  std::size_t stride_, half_;
  std::size_t rows_ = 0;
  std::vector<double> ring_;  // the last 2·half + 1 values, by row modulo its size
};

/// What the report draws of one rank's rows of steps.csv.
struct RankSteps {
  std::size_t rows = 0;
  RollingSample step_ms{1, 1};
  bool has_data_wait = false;
  RollingSample data_wait_ms{1, 1};
  /// The phases' columns (NAME_ms) that took time, each as the mean of every `group` rows in turn.
  std::size_t group = 1;
  std::vector<double> group_x;
  std::vector<std::pair<std::string, std::vector<double>>> phases;
};

/// steps.csv at `path` by rank (its `rank` column; all rows under rank 0 without it). Every rank is
/// sampled at the stride that gives the first rank at most `max_points` points; the phase columns named
/// in `phase_columns` (those the file has) are averaged into at most `max_groups` groups. Throws
/// std::invalid_argument naming the file and line of a row with another field count than the header,
/// or a file without a step_ms column.
std::map<double, RankSteps> read_step_series(const std::filesystem::path& path, const std::vector<std::string>& phase_columns,
                                             std::size_t max_points = 1500, std::size_t max_groups = 300,
                                             std::size_t window = 51);

}  // namespace fitscope::report
