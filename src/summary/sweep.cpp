#include "fitscope/summary/sweep.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

namespace fitscope {

std::optional<StepTimeFit> fit_step_time(const std::vector<SweepRow>& rows) {
  std::set<int64_t> sizes;
  for (const auto& r : rows) {
    if (!r.out_of_memory) sizes.insert(r.batch_size);
  }
  if (sizes.size() < 2) return std::nullopt;
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& r : rows) {
    if (r.out_of_memory) continue;  // no step time
    const double x = static_cast<double>(r.batch_size), y = r.step_ms_p50;
    n += 1;
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  StepTimeFit fit;
  fit.per_sample_ms = (n * sxy - sx * sy) / (n * sxx - sx * sx);
  fit.fixed_ms = (sy - fit.per_sample_ms * sx) / n;
  if (fit.fixed_ms >= 0 && fit.per_sample_ms >= 0) return fit;
  // a negative cost means nothing: the best fit with both >= 0 lies on an edge, one of the two at 0
  const auto squared_error = [&](const StepTimeFit& f) {
    double e = 0;
    for (const auto& r : rows) {
      if (r.out_of_memory) continue;
      const double d = f.fixed_ms + f.per_sample_ms * static_cast<double>(r.batch_size) - r.step_ms_p50;
      e += d * d;
    }
    return e;
  };
  const StepTimeFit only_per_sample{0, std::max(0.0, sxy / sxx)}, only_fixed{std::max(0.0, sy / n), 0};
  return squared_error(only_per_sample) <= squared_error(only_fixed) ? only_per_sample : only_fixed;
}

namespace {
/// The median of `values` (the mean of the middle two for an even count); 0 when empty.
double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}
}  // namespace

void SweepRow::set_windows(std::vector<double> samples_per_s_by_window) {
  windows = std::move(samples_per_s_by_window);
  samples_per_s = median(windows);
}

double SweepRow::low() const { return windows.empty() ? samples_per_s : *std::min_element(windows.begin(), windows.end()); }
double SweepRow::high() const { return windows.empty() ? samples_per_s : *std::max_element(windows.begin(), windows.end()); }

namespace {
/// `row`'s throughput over the best's: each round's ratio, sorted (see Knee).
std::vector<double> ratios_to(const SweepRow& row, const SweepRow& best) {
  std::vector<double> r;
  if (best.samples_per_s <= 0) return {0};
  if (!row.windows.empty() && row.windows.size() == best.windows.size()) {
    for (std::size_t i = 0; i < row.windows.size(); ++i) r.push_back(best.windows[i] > 0 ? row.windows[i] / best.windows[i] : 0);
  } else {
    r = {row.low() / best.samples_per_s, row.samples_per_s / best.samples_per_s, row.high() / best.samples_per_s};
  }
  std::sort(r.begin(), r.end());
  return r;
}
}  // namespace

Knee find_knee(const std::vector<SweepRow>& rows, double fraction) {
  if (rows.empty()) throw std::invalid_argument("a sweep without rows has no knee");
  const SweepRow* best = &rows.front();
  for (const auto& r : rows) {
    if (r.samples_per_s > best->samples_per_s) best = &r;
  }
  Knee knee{-1, true, -1, -1};
  const auto take_smallest = [](int64_t& into, int64_t b) {
    if (into < 0 || b < into) into = b;
  };
  for (const auto& r : rows) {
    const std::vector<double> ratios = &r == best ? std::vector<double>{1} : ratios_to(r, *best);
    if (median(ratios) >= fraction) take_smallest(knee.batch_size, r.batch_size);
    if (ratios.back() >= fraction) take_smallest(knee.lowest, r.batch_size);   // not surely below
    if (ratios.front() >= fraction) take_smallest(knee.highest, r.batch_size);  // surely reaches
  }
  knee.resolved = knee.lowest == knee.batch_size && knee.highest == knee.batch_size;
  return knee;
}

std::string describe_knee(const Knee& knee) {
  const std::string b = std::to_string(knee.batch_size);
  if (knee.resolved) {
    return "Knee at batch size " + b + ": the smallest batch reaching 90% of the best samples/s, in every round";
  }
  return "Knee not resolved: between batch sizes " + std::to_string(knee.lowest) + " and " +
         std::to_string(knee.highest) + " (" + b +
         " by the medians): round by round, their samples/s straddle 90% of the best's. Longer windows "
         "(SweepOptions::window_seconds) or a quieter machine would separate them";
}

int64_t MemoryCurve::largest_within(double budget_mb) const {
  if (per_sample_mb <= 0 || budget_mb <= fixed_mb) return 0;
  return static_cast<int64_t>(std::floor((budget_mb - fixed_mb) / per_sample_mb));
}

std::optional<MemoryCurve> fit_memory(const std::vector<SweepRow>& rows) {
  std::set<int64_t> sizes;
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& r : rows) {
    if (r.out_of_memory || r.memory_mb <= 0) continue;
    const double x = static_cast<double>(r.batch_size);
    sizes.insert(r.batch_size);
    n += 1, sx += x, sy += r.memory_mb, sxx += x * x, sxy += x * r.memory_mb;
  }
  if (sizes.size() < 2) return std::nullopt;
  MemoryCurve c;
  c.per_sample_mb = (n * sxy - sx * sy) / (n * sxx - sx * sx);
  c.fixed_mb = (sy - c.per_sample_mb * sx) / n;
  if (!(c.per_sample_mb > 0)) return std::nullopt;
  return c;
}

MemoryBudgetChoice choose_within_budget(const std::vector<SweepRow>& rows, double budget_mb) {
  MemoryBudgetChoice choice;
  choice.budget_mb = budget_mb;
  choice.curve = fit_memory(rows);
  if (choice.curve) choice.predicted = choice.curve->largest_within(budget_mb);
  const SweepRow* best = nullptr;
  for (const auto& r : rows) {
    if (r.out_of_memory || r.memory_mb <= 0 || r.memory_mb > budget_mb) continue;
    if (!best || r.samples_per_s > best->samples_per_s) best = &r;
  }
  char text[400];
  int used = std::snprintf(text, sizeof text, "memory budget %.1f MB (the steps' tensors)", budget_mb);
  if (choice.curve) {
    used += std::snprintf(text + used, sizeof text - static_cast<std::size_t>(used),
                          ": the curve %.2f MB + %.4f MB an example predicts batch %lld", choice.curve->fixed_mb,
                          choice.curve->per_sample_mb, static_cast<long long>(choice.predicted));
  }
  if (best) {
    choice.chosen = best->batch_size;
    std::snprintf(text + used, sizeof text - static_cast<std::size_t>(used), "; the fastest within it: batch %lld, %.0f samples/s, %.1f MB%s",
                  static_cast<long long>(best->batch_size), best->samples_per_s, best->memory_mb,
                  best->checked ? " (the predicted batch size, checked by a run)" : "");
  } else {
    std::snprintf(text + used, sizeof text - static_cast<std::size_t>(used), "; no batch size measured fits it");
  }
  choice.text = text;
  return choice;
}

std::string sweep_json(const std::vector<SweepRow>& rows, const std::string& model, const SweepMethod& method,
                       const std::optional<MemoryBudgetChoice>& budget) {
  using nlohmann::json;
  json out_rows = json::array();
  for (const auto& r : rows) {
    out_rows.push_back({{"batch_size", r.batch_size},
                        {"samples_per_s", r.samples_per_s},
                        {"samples_per_s_low", r.low()},
                        {"samples_per_s_high", r.high()},
                        {"wide", r.spread() > kWideSpread},
                        {"windows", r.windows},
                        {"steps", r.steps},
                        {"step_ms_mean", r.step_ms_mean},
                        {"step_ms_p50", r.step_ms_p50},
                        {"step_ms_p99", r.step_ms_p99},
                        {"data_wait_share", r.data_wait_share},
                        {"verdict", r.verdict},
                        {"threads", r.threads},
                        {"memory_mb", r.memory_mb},
                        {"out_of_memory", r.out_of_memory},
                        {"failure", r.failure},
                        {"checked", r.checked}});
  }
  json fit = nullptr;
  if (auto f = fit_step_time(rows)) fit = {{"fixed_ms", f->fixed_ms}, {"per_sample_ms", f->per_sample_ms}};
  json out = {{"model", model},
              {"method",
               {{"windows", method.windows}, {"window_seconds", method.window_seconds}, {"window_steps", method.window_steps}}},
              {"rows", out_rows},
              {"fit", fit},
              {"knee_batch_size", nullptr},
              {"knee", nullptr},
              {"memory_curve", nullptr},
              {"memory_budget", nullptr}};
  if (const auto curve = fit_memory(rows)) out["memory_curve"] = {{"fixed_mb", curve->fixed_mb}, {"per_sample_mb", curve->per_sample_mb}};
  if (budget) {
    out["memory_budget"] = {{"budget_mb", budget->budget_mb}, {"predicted_batch_size", budget->predicted},
                            {"chosen_batch_size", budget->chosen}, {"text", budget->text}};
  }
  if (!rows.empty()) {
    const Knee knee = find_knee(rows);
    out["knee_batch_size"] = knee.batch_size;
    out["knee"] = {{"resolved", knee.resolved}, {"lowest", knee.lowest}, {"highest", knee.highest}};
  }
  return out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";  // a path's bytes that are not UTF-8: U+FFFD
}

std::string sweep_csv(const std::vector<SweepRow>& rows) {
  std::string out =
      "batch_size,samples_per_s,samples_per_s_low,samples_per_s_high,windows,steps,step_ms_mean,step_ms_p50,"
      "step_ms_p99,data_wait_share,verdict,threads\n";
  char line[320];
  for (const auto& r : rows) {
    std::snprintf(line, sizeof line, "%lld,%.3f,%.3f,%.3f,%lld,%lld,%.6f,%.6f,%.6f,%.6f,%s,%s\n",
                  static_cast<long long>(r.batch_size), r.samples_per_s, r.low(), r.high(),
                  static_cast<long long>(r.windows.size()), static_cast<long long>(r.steps), r.step_ms_mean, r.step_ms_p50,
                  r.step_ms_p99, r.data_wait_share, r.verdict.c_str(), r.threads.c_str());
    out += line;
  }
  return out;
}

std::string format_sweep(const std::vector<SweepRow>& rows) {
  std::string out;
  char line[320];
  std::snprintf(line, sizeof line, "%10s %12s %22s %10s %10s %10s %8s %9s  %s\n", "batch", "samples/s",
                "windows (low-high)", "p50 ms", "p99 ms", "data wait", "mem MB", "threads", "verdict");
  out += line;
  const std::optional<Knee> knee = rows.empty() ? std::nullopt : std::optional<Knee>(find_knee(rows));
  for (const auto& r : rows) {
    if (r.out_of_memory) {  // reported, never a crash of the sweep
      std::snprintf(line, sizeof line, "%10lld  out of memory: ", static_cast<long long>(r.batch_size));
      out += line + r.failure + "\n";
      continue;
    }
    char range[64];
    std::snprintf(range, sizeof range, "%.0f-%.0f%s", r.low(), r.high(),
                  r.spread() > kWideSpread ? " wide" : "");
    std::snprintf(line, sizeof line, "%10lld %12.0f %22s %10.3f %10.3f %9.1f%% %8.1f %9s  %s%s%s\n",
                  static_cast<long long>(r.batch_size), r.samples_per_s, range, r.step_ms_p50, r.step_ms_p99,
                  r.data_wait_share * 100, r.memory_mb, r.threads.c_str(), r.verdict.c_str(),
                  knee && r.batch_size == knee->batch_size ? "   <- knee" : "", r.checked ? "   (checked for the budget)" : "");
    out += line;
  }
  if (std::any_of(rows.begin(), rows.end(), [](const SweepRow& r) { return r.spread() > kWideSpread; })) {
    std::snprintf(line, sizeof line, "wide: the windows differ by more than %.0f%% of the median: not a number to compare\n",
                  kWideSpread * 100);
    out += line;
  }
  if (knee) out += describe_knee(*knee) + "\n";
  if (auto f = fit_step_time(rows)) {
    std::snprintf(line, sizeof line,
                  "Step time ~ %.3f ms fixed per step + %.4f ms per example (least squares over the medians, both >= 0)\n",
                  f->fixed_ms, f->per_sample_ms);
    out += line;
  }
  return out;
}

}  // namespace fitscope
