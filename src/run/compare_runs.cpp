#include "fitscope/run/compare_runs.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <tuple>

#include "fitscope/io/atomic_file.hpp"
#include "fitscope/io/detail/csv_rows.hpp"
#include "fitscope/run/run_config.hpp"
#include "fitscope/run/run_directory.hpp"
#include "fitscope/summary/run_summary.hpp"

namespace fitscope {

namespace {

constexpr std::uintmax_t kMaxSummaryBytes = std::uintmax_t{64} << 20;

std::string setting_of(const RunSummary& s, const std::string& name) {
  for (const auto& [key, value] : s.settings) {
    if (key == name) return value;
  }
  return "";
}

// steps.csv's measured rows: the chief's step and phases, every rank's phases
void read_steps(const std::string& path, const RunSummary& summary, int segments, RunSeries& out) {
  int rank_column = -1, step_column = -1, probed_column = -1;
  std::vector<std::pair<int, std::string>> phase_columns;
  std::map<int64_t, int64_t> rows_seen;  // by rank
  int64_t chief = -1;
  const int64_t warmup = summary.warmup_steps, measured = summary.measured_steps;
  const auto value = [](const std::vector<double>& row, int column) {
    const double v = row[static_cast<std::size_t>(column)];
    return std::isfinite(v) ? v : 0.0;
  };
  detail::for_each_csv_row(
      path,
      [&](const std::vector<std::string>& columns) {
        for (std::size_t i = 0; i < columns.size(); ++i) {
          const std::string& c = columns[i];
          const int index = static_cast<int>(i);
          if (c == "rank") rank_column = index;
          else if (c == "step_ms") step_column = index;
          else if (c == "probed") probed_column = index;
          else if (c.size() > 3 && c.compare(c.size() - 3, 3, "_ms") == 0) phase_columns.emplace_back(index, c.substr(0, c.size() - 3));
        }
        if (step_column < 0) throw std::invalid_argument(path + ": no step_ms column (expected the steps.csv a run wrote)");
        out.step = SegmentedSeries(measured, segments);
        for (const auto& [index, name] : phase_columns) out.phases.emplace_back(name, SegmentedSeries(measured, segments));
      },
      [&](const std::vector<double>& row) {
        const int64_t rank = rank_column >= 0 ? static_cast<int64_t>(value(row, rank_column)) : 0;
        if (rows_seen[rank]++ < warmup) return;
        // a probed step is left out of the distributions summary.json's counts hold
        if (probed_column >= 0 && row[static_cast<std::size_t>(probed_column)] == 1) return;
        const double step = row[static_cast<std::size_t>(step_column)];
        if (!std::isfinite(step)) throw std::invalid_argument(path + ": a step_ms that is not a number");
        auto own = std::find_if(out.ranks.begin(), out.ranks.end(), [&](const RunSeries::Rank& r) { return r.rank == rank; });
        if (own == out.ranks.end()) {
          out.ranks.push_back({rank, {}});
          own = out.ranks.end() - 1;
          for (const auto& [index, name] : phase_columns) own->phases.emplace_back(name, SegmentedSeries(measured, segments));
        }
        for (std::size_t p = 0; p < phase_columns.size(); ++p) own->phases[p].second.push(value(row, phase_columns[p].first));
        if (chief < 0) chief = rank;
        if (rank != chief) return;
        out.step.push(step);
        for (std::size_t p = 0; p < phase_columns.size(); ++p) out.phases[p].second.push(value(row, phase_columns[p].first));
      });
  std::sort(out.ranks.begin(), out.ranks.end(), [](const RunSeries::Rank& x, const RunSeries::Rank& y) { return x.rank < y.rank; });
}

}  // namespace

RunSeries read_run_series(const std::string& directory, int segments) {
  const RunDirectory dir(directory);
  const RunSummary summary = RunSummary::from_json(read_whole_file(dir.summary(), "the summary.json a run wrote", kMaxSummaryBytes),
                                                   dir.summary());
  RunSeries out;
  read_steps(dir.steps(), summary, segments, out);
  for (const auto& [name, values] : read_config(dir.config())) {
    if (name == "run-dir") continue;  // where the run wrote: different by design
    std::string joined;
    for (const std::string& v : values) joined += (joined.empty() ? "" : ",") + v;
    out.settings.push_back({name, joined, "config.toml"});
  }
  const auto chosen = [&](const std::string& name, const std::string& value) { out.settings.push_back({name, value, "summary.json"}); };
  chosen("threads.intra_op (chosen)", std::to_string(summary.threads.setting.intra_op));
  chosen("threads.blas (chosen)", std::to_string(summary.threads.setting.blas));
  chosen("threads.cores", std::to_string(summary.threads.cores));
  chosen("loader.workers (at the end)", std::to_string(summary.loader.workers));
  chosen("loader.prefetch (at the end)", std::to_string(summary.loader.prefetch));
  chosen("world_size", std::to_string(summary.world_size));
  chosen("device", summary.device);
  chosen("version", setting_of(summary, "version"));
  for (const CallbackSummary& c : summary.callbacks) {
    out.callbacks.push_back({c.name, c.hook, summary.steps > 0 ? c.total_ms / static_cast<double>(summary.steps) : 0.0});
  }
  out.run.directory = directory;
  out.run.model = summary.model;
  out.run.data = setting_of(summary, "data");
  out.run.measured_steps = summary.measured_steps;
  out.run.step_p50_ms = summary.step_ms.p50;
  out.run.samples_per_s = summary.samples_per_s;
  out.run.verdict = verdict_headline(summary.verdict, summary.measured_steps) +
                    (summary.verdict.advice.empty() ? "" : ". " + summary.verdict.advice);
  out.run.machine = summary.verdict.machine;
  return out;
}

Comparison compare_runs(const std::string& a, const std::string& b, const CompareOptions& options) {
  return compare_runs(std::vector<std::string>{a}, std::vector<std::string>{b}, options);
}

namespace {

// runs of one side are repeats of one setting: their spread is the noise the other side is judged against
void expect_repeats(const std::vector<RunSeries>& runs, const std::vector<std::string>& directories, const char* side) {
  for (std::size_t i = 1; i < runs.size(); ++i) {
    for (const RunSetting& s : runs[0].settings) {
      if (s.source != "config.toml") continue;
      const auto same = std::find_if(runs[i].settings.begin(), runs[i].settings.end(),
                                     [&](const RunSetting& o) { return o.name == s.name && o.source == s.source; });
      const std::string other = same != runs[i].settings.end() ? same->value : "-";
      if (other != s.value) {
        throw std::invalid_argument(std::string("the runs of ") + side + " are not repeats of one setting: " + s.name + " is " + s.value +
                                    " in " + directories[0] + ", " + other + " in " + directories[i] + " (runs of " + side +
                                    " are compared as runs of the same settings; compare different settings as A and B)");
      }
    }
  }
}

}  // namespace

Comparison compare_runs(const std::vector<std::string>& a, const std::vector<std::string>& b, const CompareOptions& options) {
  if (a.empty() || b.empty()) throw std::invalid_argument("compare_runs: no run of A or of B (expected one or more run directories each)");
  std::vector<RunSeries> runs[2];
  for (int side = 0; side < 2; ++side) {
    for (const std::string& directory : side == 0 ? a : b) runs[side].push_back(read_run_series(directory, options.comparison.segments));
  }
  if (!options.force) {
    const RunSeries &first = runs[0].front(), &second = runs[1].front();
    for (const auto& [what, in_a, in_b] : {std::make_tuple("models", first.run.model, second.run.model),
                                           std::make_tuple("data", first.run.data, second.run.data)}) {
      if (in_a != in_b) {
        throw std::invalid_argument(std::string("the runs trained different ") + what + ": " + a.front() + " " + in_a + ", " + b.front() +
                                    " " + in_b + " (their step times differ for reasons no part of the step names; "
                                    "CompareOptions::force compares them all the same)");
      }
    }
  }
  expect_repeats(runs[0], a, "A");
  expect_repeats(runs[1], b, "B");
  return compare(runs[0], runs[1], options.comparison);
}

}  // namespace fitscope
