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
                    {"forward_mb", t.per_step(l.forward_bytes) * 1e-6},
                    {"backward_mb", t.per_step(l.backward_bytes) * 1e-6},
                    {"share", phases_ms > 0 ? ms / phases_ms : 0.0}});
  }
  return {{"every", t.every},
          {"auto", t.auto_every},
          {"probed_steps", t.probed_steps},
          {"probe_warmups", t.probe_warmups},
          {"probe_cost", t.probe_cost},
          {"run_cost", t.run_cost()},
          {"why_not", t.why_not},
          {"clock", t.device_clock ? "device" : "host"},
          {"forward_ms", t.per_step_ms(t.forward_phase_ns)},
          {"backward_ms", t.per_step_ms(t.backward_phase_ns)},
          {"unattributed_forward_ms", t.per_step_ms(t.unattributed_forward_ns())},
          {"unattributed_backward_ms", t.per_step_ms(t.unattributed_backward_ns())},
          {"step_gflop", t.step_flops() * 1e-9},
          {"rows", rows}};
}

LayerTimes layer_times_from_json(const Reader& r) {
  LayerTimes t;
  t.every = r.get<int64_t>("every");
  t.auto_every = r.get<bool>("auto");
  t.probed_steps = r.get<int64_t>("probed_steps");
  if (r.raw().contains("probe_warmups")) t.probe_warmups = r.get<int64_t>("probe_warmups");  // older files have none
  t.probe_cost = r.get<double>("probe_cost");
  t.why_not = r.get<std::string>("why_not");
  if (r.raw().contains("clock")) t.device_clock = r.get<std::string>("clock") == "device";  // older files: the host's
  // summary.json keeps figures per probed step; the value keeps sums
  const auto n = static_cast<double>(t.probed_steps);
  const auto ns = [n](double ms) { return static_cast<int64_t>(std::llround(ms * 1e6 * n)); };
  t.forward_phase_ns = ns(r.get<double>("forward_ms"));
  t.backward_phase_ns = ns(r.get<double>("backward_ms"));
  // operations are whole numbers: rounded back, so that the file written again is the same
  const auto flops = [n](double gflop) { return static_cast<double>(std::llround(gflop * 1e9 * n)); };
  const json& rows = r.array("rows");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Reader l = r.element(rows[i], i, "rows");
    // bytes are whole numbers too; older files have none
    const auto bytes = [&](const char* key) {
      return l.raw().contains(key) ? static_cast<double>(std::llround(l.get<double>(key) * 1e6 * n)) : 0.0;
    };
    t.layers.push_back({l.get<std::string>("name"), ns(l.get<double>("forward_ms")), ns(l.get<double>("backward_ms")),
                        flops(l.get<double>("forward_gflop")), flops(l.get<double>("backward_gflop")), bytes("forward_mb"),
                        bytes("backward_mb")});
  }
  return t;
}

json machine_peak_to_json(const MachinePeak& p) {
  return {{"gemm_gflops", p.gemm_gflops}, {"memory_gbps", p.memory_gbps}, {"cores", p.cores}, {"device", p.device},
          {"key", p.key},         {"cached", p.cached}};
}

MachinePeak machine_peak_from_json(const Reader& r) {
  MachinePeak p;
  p.gemm_gflops = r.get<double>("gemm_gflops");
  p.memory_gbps = r.get<double>("memory_gbps");
  p.cores = r.get<int64_t>("cores");
  if (r.raw().contains("device")) p.device = r.get<std::string>("device");  // older files: a CPU's
  p.key = r.get<std::string>("key");
  p.cached = r.get<bool>("cached");
  return p;
}

json memory_to_json(const MemorySummary& m) {
  json phases = json::object();
  for (const auto& [name, p] : m.phases) {
    phases[name] = {{"peak_bytes", p.peak_bytes}, {"mean_peak_bytes", p.mean_peak_bytes}, {"allocated_bytes", p.allocated_bytes}};
  }
  const MemoryGrowth& g = m.growth;
  return {{"steps", m.steps},
          {"device", m.device},
          {"why_not", m.why_not},
          {"phases", phases},
          {"step_peak_bytes", m.step_peak_bytes},
          {"mean_step_peak_bytes", m.mean_step_peak_bytes},
          {"allocated_per_step_bytes", m.allocated_per_step},
          {"held_at_start_bytes", m.held_at_start},
          {"held_at_end_bytes", m.held_at_end},
          {"resident_peak_bytes", m.resident_peak},
          {"growth",
           {{"bytes_per_step", g.bytes_per_step}, {"low", g.low}, {"high", g.high}, {"steps", g.steps}, {"leak", g.leak}}}};
}

MemorySummary memory_from_json(const Reader& r) {
  MemorySummary m;
  m.steps = r.get<int64_t>("steps");
  // a file from before GPU memory was counted counted the CPU's
  m.device = r.raw().contains("device") ? r.get<std::string>("device") : m.steps > 0 ? "cpu" : "";
  m.why_not = r.get<std::string>("why_not");
  const Reader phases = r.object("phases");
  for (const auto& [name, value] : phases.raw().items()) {
    const Reader p = phases.object(name.c_str());
    m.phases[name] = {p.get<int64_t>("peak_bytes"), p.get<double>("mean_peak_bytes"), p.get<double>("allocated_bytes")};
  }
  m.step_peak_bytes = r.get<int64_t>("step_peak_bytes");
  m.mean_step_peak_bytes = r.get<double>("mean_step_peak_bytes");
  m.allocated_per_step = r.get<double>("allocated_per_step_bytes");
  m.held_at_start = r.get<int64_t>("held_at_start_bytes");
  m.held_at_end = r.get<int64_t>("held_at_end_bytes");
  m.resident_peak = r.get<int64_t>("resident_peak_bytes");
  const Reader g = r.object("growth");
  m.growth = {g.get<double>("bytes_per_step"), g.get<double>("low"), g.get<double>("high"), g.get<int64_t>("steps"), g.get<bool>("leak")};
  return m;
}

}  // namespace fitscope::detail
