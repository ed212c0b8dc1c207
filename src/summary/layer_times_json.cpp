#include "layer_times_json.hpp"

#include <cmath>

namespace fitscope::detail {

using nlohmann::json;

json layer_times_to_json(const LayerTimes& t) {
  const double phases_ms = t.per_step_ms(t.forward_phase_ns + t.backward_phase_ns);
  json rows = json::array();
  for (const LayerTime& l : t.layers) {
    const double ms = t.per_step_ms(l.forward_ns + l.backward_ns);
    rows.push_back({{"name", l.name},
                    {"forward_ms", t.per_step_ms(l.forward_ns)},
                    {"backward_ms", t.per_step_ms(l.backward_ns)},
                    {"forward_gflop", t.per_step(l.forward_flops) * 1e-9},
                    {"backward_gflop", t.per_step(l.backward_flops) * 1e-9},
                    {"share", phases_ms > 0 ? ms / phases_ms : 0.0}});
  }
  return {{"every", t.every},
          {"auto", t.auto_every},
          {"probed_steps", t.probed_steps},
          {"probe_cost", t.probe_cost},
          {"run_cost", t.run_cost()},
          {"why_not", t.why_not},
          {"forward_ms", t.per_step_ms(t.forward_phase_ns)},
          {"backward_ms", t.per_step_ms(t.backward_phase_ns)},
          {"unattributed_forward_ms", t.per_step_ms(t.unattributed_forward_ns())},
          {"unattributed_backward_ms", t.per_step_ms(t.unattributed_backward_ns())},
          {"other_gflop", t.per_step(t.other_flops) * 1e-9},
          {"step_gflop", t.step_flops() * 1e-9},
          {"rows", rows}};
}

LayerTimes layer_times_from_json(const Reader& r) {
  LayerTimes t;
  t.every = r.get<int64_t>("every");
  t.auto_every = r.get<bool>("auto");
  t.probed_steps = r.get<int64_t>("probed_steps");
  t.probe_cost = r.get<double>("probe_cost");
  t.why_not = r.get<std::string>("why_not");
  // summary.json keeps figures per probed step; the value keeps sums
  const auto n = static_cast<double>(t.probed_steps);
  const auto ns = [n](double ms) { return static_cast<int64_t>(std::llround(ms * 1e6 * n)); };
  t.forward_phase_ns = ns(r.get<double>("forward_ms"));
  t.backward_phase_ns = ns(r.get<double>("backward_ms"));
  t.other_flops = r.get<double>("other_gflop") * 1e9 * n;
  const json& rows = r.array("rows");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Reader l = r.element(rows[i], i, "rows");
    t.layers.push_back({l.get<std::string>("name"), ns(l.get<double>("forward_ms")), ns(l.get<double>("backward_ms")),
                        l.get<double>("forward_gflop") * 1e9 * n, l.get<double>("backward_gflop") * 1e9 * n});
  }
  return t;
}

json machine_peak_to_json(const MachinePeak& p) {
  return {{"gemm_gflops", p.gemm_gflops}, {"memory_gbps", p.memory_gbps}, {"cores", p.cores}, {"key", p.key}, {"cached", p.cached}};
}

MachinePeak machine_peak_from_json(const Reader& r) {
  MachinePeak p;
  p.gemm_gflops = r.get<double>("gemm_gflops");
  p.memory_gbps = r.get<double>("memory_gbps");
  p.cores = r.get<int64_t>("cores");
  p.key = r.get<std::string>("key");
  p.cached = r.get<bool>("cached");
  return p;
}

json memory_to_json(const MemorySummary& m) {
  constexpr double kMb = 1e-6;
  json phases = json::object();
  for (const auto& [name, p] : m.phases) {
    phases[name] = {{"peak_mb", static_cast<double>(p.peak_bytes) * kMb}, {"mean_peak_mb", p.mean_peak_bytes * kMb},
                    {"allocated_mb", p.allocated_bytes * kMb}};
  }
  const MemoryGrowth& g = m.growth;
  return {{"steps", m.steps},
          {"why_not", m.why_not},
          {"phases", phases},
          {"step_peak_mb", static_cast<double>(m.step_peak_bytes) * kMb},
          {"mean_step_peak_mb", m.mean_step_peak_bytes * kMb},
          {"allocated_per_step_mb", m.allocated_per_step * kMb},
          {"held_at_start_mb", static_cast<double>(m.held_at_start) * kMb},
          {"held_at_end_mb", static_cast<double>(m.held_at_end) * kMb},
          {"resident_peak_mb", static_cast<double>(m.resident_peak) * kMb},
          {"growth",
           {{"mb_per_step", g.bytes_per_step * kMb}, {"low", g.low * kMb}, {"high", g.high * kMb}, {"steps", g.steps}, {"leak", g.leak}}}};
}

MemorySummary memory_from_json(const Reader& r) {
  const auto bytes = [](double mb) { return static_cast<int64_t>(std::llround(mb * 1e6)); };
  MemorySummary m;
  m.steps = r.get<int64_t>("steps");
  m.why_not = r.get<std::string>("why_not");
  const Reader phases = r.object("phases");
  for (const auto& [name, value] : phases.raw().items()) {
    const Reader p = phases.object(name.c_str());
    m.phases[name] = {bytes(p.get<double>("peak_mb")), p.get<double>("mean_peak_mb") * 1e6, p.get<double>("allocated_mb") * 1e6};
  }
  m.step_peak_bytes = bytes(r.get<double>("step_peak_mb"));
  m.mean_step_peak_bytes = r.get<double>("mean_step_peak_mb") * 1e6;
  m.allocated_per_step = r.get<double>("allocated_per_step_mb") * 1e6;
  m.held_at_start = bytes(r.get<double>("held_at_start_mb"));
  m.held_at_end = bytes(r.get<double>("held_at_end_mb"));
  m.resident_peak = bytes(r.get<double>("resident_peak_mb"));
  const Reader g = r.object("growth");
  m.growth = {g.get<double>("mb_per_step") * 1e6, g.get<double>("low") * 1e6, g.get<double>("high") * 1e6, g.get<int64_t>("steps"),
              g.get<bool>("leak")};
  return m;
}

}  // namespace fitscope::detail
