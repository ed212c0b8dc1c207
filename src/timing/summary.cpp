#include "fitscope/timing/summary.hpp"

#include <cstdio>
#include <nlohmann/json.hpp>

namespace fitscope {

std::string summary_json(const PhaseStats& stats, const RunInfo& info, const Verdict& verdict) {
  using nlohmann::json;
  json logs = json::object();
  for (const auto& [key, value] : info.logs) logs[key] = value;

  const Distribution step = stats.step();
  json phases = json::object();
  for (Phase p : all_phases()) {
    const Distribution d = stats.phase(p);
    phases[std::string(phase_name(p))] = {{"mean_ms", d.mean_ms}, {"p50_ms", d.p50_ms},
                                          {"p90_ms", d.p90_ms},   {"p99_ms", d.p99_ms},
                                          {"max_ms", d.max_ms},   {"share", stats.share(p)}};
  }
  json out = {
      {"model", info.model},
      {"steps", stats.steps()},
      {"warmup_steps", std::min(stats.warmup_steps(), stats.steps())},
      {"measured_steps", stats.measured_steps()},
      {"wall_s", info.wall_s},
      {"samples_per_s", stats.samples_per_s()},
      {"threads", info.threads},
      {"logs", logs},
      {"world_size", info.world_size},
      {"batch_size", info.batch_size},
      {"device", info.device},
      {"step_ms",
       {{"mean", step.mean_ms}, {"p50", step.p50_ms}, {"p90", step.p90_ms}, {"p99", step.p99_ms},
        {"max", step.max_ms}}},
      {"phases", phases},
      {"callbacks", json::array()},
      {"ranks", json::array({{{"rank", 0}, {"step_ms_p50", step.p50_ms}, {"step_ms_p99", step.p99_ms}}})},
      {"stragglers", json::array()},
      {"clock_overhead_ns_per_step", info.clock_overhead_ns_per_step},
      {"verdict",
       {{"bound", verdict.bound}, {"level", verdict.level}, {"share", verdict.share},
        {"advice", verdict.advice}}},
  };
  return out.dump(2) + "\n";
}

std::string format_breakdown(const PhaseStats& stats, const Verdict& verdict) {
  std::string out;
  char line[160];
  const Distribution step = stats.step();
  std::snprintf(line, sizeof line,
                "Step time over %lld steps (%lld warm-up steps left out): p50 %.3f ms  p90 %.3f ms  "
                "p99 %.3f ms  max %.3f ms  -  %.0f samples/s\n",
                static_cast<long long>(stats.measured_steps()),
                static_cast<long long>(std::min(stats.warmup_steps(), stats.steps())), step.p50_ms,
                step.p90_ms, step.p99_ms, step.max_ms, stats.samples_per_s());
  out += line;
  std::snprintf(line, sizeof line, "  %-11s %10s %10s %10s %7s\n", "phase", "mean ms", "p50 ms",
                "p99 ms", "share");
  out += line;
  for (Phase p : all_phases()) {
    const Distribution d = stats.phase(p);
    std::snprintf(line, sizeof line, "  %-11s %10.3f %10.3f %10.3f %6.1f%%\n",
                  std::string(phase_name(p)).c_str(), d.mean_ms, d.p50_ms, d.p99_ms,
                  stats.share(p) * 100);
    out += line;
  }
  out += "Verdict: " + verdict.level + " " + verdict.bound + "-bound (" +
         std::to_string(static_cast<int>(verdict.share * 100 + 0.5)) + "%). " + verdict.advice + "\n";
  return out;
}

}  // namespace fitscope
