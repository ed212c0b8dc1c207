#include "report/step_series.hpp"

#include <algorithm>
#include <stdexcept>

#include "fitscope/io/detail/csv_rows.hpp"
#include "report/page.hpp"

namespace fitscope::report {

RollingSample::RollingSample(std::size_t stride, std::size_t window)
    : stride_(std::max<std::size_t>(stride, 1)), half_(window / 2), ring_(2 * (window / 2) + 1) {}

void RollingSample::push(double v) {
  ring_[rows_ % ring_.size()] = v;
  ++rows_;
  // the row `half_` back now has its whole window
  if (rows_ > half_) sample(rows_ - 1 - half_);
}

void RollingSample::finish() {
  for (std::size_t row = rows_ > half_ ? rows_ - half_ : 0; row < rows_; ++row) sample(row);
}

void RollingSample::sample(std::size_t row) {
  if (row % stride_ != 0) return;
  const std::size_t lo = row >= half_ ? row - half_ : 0, hi = std::min(rows_, row + half_ + 1);
  std::vector<double> w;
  w.reserve(hi - lo);
  for (std::size_t r = lo; r < hi; ++r) w.push_back(ring_[r % ring_.size()]);
  std::sort(w.begin(), w.end());
  const auto at = [&](double q) { return w[static_cast<std::size_t>(q * static_cast<double>(w.size() - 1))]; };
  x.push_back(static_cast<double>(row));
  value.push_back(ring_[row % ring_.size()]);
  p10.push_back(at(0.1));
  p50.push_back(at(0.5));
  p90.push_back(at(0.9));
}

std::map<double, RankSteps> read_step_series(const std::filesystem::path& path, const std::vector<std::string>& phase_columns,
                                             std::size_t max_points, std::size_t max_groups, std::size_t window) {
  std::vector<std::string> columns;
  int rank_column = -1, step_column = -1, wait_column = -1;
  std::vector<std::pair<std::string, int>> phases;  // the phases the file has, by column
  const auto header = [&](const std::vector<std::string>& names) {
    columns = names;
    const auto find = [&](const std::string& name) {
      const auto it = std::find(columns.begin(), columns.end(), name);
      return it == columns.end() ? -1 : static_cast<int>(it - columns.begin());
    };
    rank_column = find("rank");
    step_column = find("step_ms");
    wait_column = find("data_wait_ms");
    if (step_column < 0) throw std::invalid_argument(path.string() + ": line 1: no step_ms column");
    for (const std::string& phase : phase_columns) {
      if (const int c = find(phase); c >= 0) phases.emplace_back(phase, c);
    }
  };
  const auto rank_of = [&](const std::vector<double>& row) { return rank_column < 0 ? 0.0 : row[static_cast<std::size_t>(rank_column)]; };

  // the first pass counts each rank's rows: the strides and groups depend on them
  std::map<double, std::size_t> counts;
  detail::for_each_csv_row(path, header, [&](const std::vector<double>& row) { ++counts[rank_of(row)]; });
  std::map<double, RankSteps> out;
  if (counts.empty()) return out;
  const std::size_t stride = std::max<std::size_t>(1, counts.begin()->second / max_points);
  struct Sums {
    std::vector<double> sum;        // per phase, of the group being read
    std::vector<bool> took_time;    // per phase: some row was not 0
    std::vector<std::vector<double>> means;
  };
  std::map<double, Sums> sums;
  for (const auto& [rank, n] : counts) {
    RankSteps& r = out[rank];
    r.step_ms = RollingSample(stride, window);
    r.has_data_wait = wait_column >= 0;
    r.data_wait_ms = RollingSample(stride, window);
    r.group = (n + max_groups - 1) / max_groups;
    sums[rank] = Sums{std::vector<double>(phases.size()), std::vector<bool>(phases.size()),
                      std::vector<std::vector<double>>(phases.size())};
  }
  const auto close_group = [&](RankSteps& r, Sums& s, std::size_t size) {
    r.group_x.push_back(static_cast<double>(r.rows - size));
    for (std::size_t p = 0; p < phases.size(); ++p) {
      s.means[p].push_back(s.sum[p] / static_cast<double>(size));
      s.sum[p] = 0;
    }
  };
  detail::for_each_csv_row(path, [](const std::vector<std::string>&) {}, [&](const std::vector<double>& row) {
    const double rank = rank_of(row);
    RankSteps& r = out[rank];
    Sums& s = sums[rank];
    r.step_ms.push(row[static_cast<std::size_t>(step_column)]);
    if (wait_column >= 0) r.data_wait_ms.push(row[static_cast<std::size_t>(wait_column)]);
    for (std::size_t p = 0; p < phases.size(); ++p) {
      const double v = row[static_cast<std::size_t>(phases[p].second)];
      s.sum[p] += v;
      if (v != 0) s.took_time[p] = true;
    }
    ++r.rows;
    if (r.rows % r.group == 0) close_group(r, s, r.group);
  });
  for (auto& [rank, r] : out) {
    Sums& s = sums[rank];
    if (r.rows % r.group != 0) close_group(r, s, r.rows % r.group);
    r.step_ms.finish();
    r.data_wait_ms.finish();
    for (std::size_t p = 0; p < phases.size(); ++p) {
      if (s.took_time[p]) r.phases.emplace_back(phases[p].first, std::move(s.means[p]));
    }
  }
  return out;
}

}  // namespace fitscope::report
