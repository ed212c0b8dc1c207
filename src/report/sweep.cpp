#include "fitscope/report/sweep.hpp"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

namespace fitscope {

std::optional<StepTimeFit> fit_step_time(const std::vector<SweepRow>& rows) {
  std::set<int64_t> sizes;
  for (const auto& r : rows) sizes.insert(r.batch_size);
  if (sizes.size() < 2) return std::nullopt;
  double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& r : rows) {
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
      const double d = f.fixed_ms + f.per_sample_ms * static_cast<double>(r.batch_size) - r.step_ms_p50;
      e += d * d;
    }
    return e;
  };
  const StepTimeFit only_per_sample{0, std::max(0.0, sxy / sxx)}, only_fixed{std::max(0.0, sy / n), 0};
  return squared_error(only_per_sample) <= squared_error(only_fixed) ? only_per_sample : only_fixed;
}

int64_t knee_batch_size(const std::vector<SweepRow>& rows, double fraction) {
  if (rows.empty()) throw std::invalid_argument("a sweep without rows has no knee");
  double best = 0;
  for (const auto& r : rows) best = std::max(best, r.samples_per_s);
  int64_t knee = -1;
  for (const auto& r : rows) {
    if (r.samples_per_s >= fraction * best && (knee < 0 || r.batch_size < knee)) knee = r.batch_size;
  }
  return knee;
}

std::string sweep_json(const std::vector<SweepRow>& rows, const std::string& model, int64_t steps) {
  using nlohmann::json;
  json out_rows = json::array();
  for (const auto& r : rows) {
    out_rows.push_back({{"batch_size", r.batch_size},
                        {"samples_per_s", r.samples_per_s},
                        {"step_ms_mean", r.step_ms_mean},
                        {"step_ms_p50", r.step_ms_p50},
                        {"step_ms_p99", r.step_ms_p99},
                        {"data_wait_share", r.data_wait_share},
                        {"verdict", r.verdict}});
  }
  json fit = nullptr;
  if (auto f = fit_step_time(rows)) fit = {{"fixed_ms", f->fixed_ms}, {"per_sample_ms", f->per_sample_ms}};
  const json out = {{"model", model},
                    {"steps", steps},
                    {"rows", out_rows},
                    {"fit", fit},
                    {"knee_batch_size", rows.empty() ? json(nullptr) : json(knee_batch_size(rows))}};
  return out.dump(2) + "\n";
}

std::string sweep_csv(const std::vector<SweepRow>& rows) {
  std::string out = "batch_size,samples_per_s,step_ms_mean,step_ms_p50,step_ms_p99,data_wait_share,verdict\n";
  char line[256];
  for (const auto& r : rows) {
    std::snprintf(line, sizeof line, "%lld,%.3f,%.6f,%.6f,%.6f,%.6f,%s\n", static_cast<long long>(r.batch_size),
                  r.samples_per_s, r.step_ms_mean, r.step_ms_p50, r.step_ms_p99, r.data_wait_share,
                  r.verdict.c_str());
    out += line;
  }
  return out;
}

std::string format_sweep(const std::vector<SweepRow>& rows) {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%10s %12s %10s %10s %10s  %s\n", "batch", "samples/s", "p50 ms", "p99 ms",
                "data wait", "verdict");
  out += line;
  const int64_t knee = rows.empty() ? -1 : knee_batch_size(rows);
  for (const auto& r : rows) {
    std::snprintf(line, sizeof line, "%10lld %12.0f %10.3f %10.3f %9.1f%%  %s%s\n",
                  static_cast<long long>(r.batch_size), r.samples_per_s, r.step_ms_p50, r.step_ms_p99,
                  r.data_wait_share * 100, r.verdict.c_str(),
                  r.batch_size == knee ? "   <- knee (>= 90% of the best samples/s)" : "");
    out += line;
  }
  if (auto f = fit_step_time(rows)) {
    std::snprintf(line, sizeof line,
                  "Step time ~ %.3f ms fixed per step + %.4f ms per example (least squares over the medians, both >= 0)\n",
                  f->fixed_ms, f->per_sample_ms);
    out += line;
  }
  return out;
}

}  // namespace fitscope
