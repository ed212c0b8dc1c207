#include "report/below_phases.hpp"

#include <sstream>
#include <vector>

#include "fitscope/timing/phase.hpp"
#include "report/page.hpp"
#include "report/svg.hpp"

namespace fitscope::report {

std::string layers_section(const RunSummary& s) {
  const LayerTimes& t = s.layers;
  std::ostringstream out;
  out << "<h2>Layers</h2>";
  if (t.probed_steps == 0) return out.str() + "<p>No step was probed: " + svg::escape(t.why_not) + ".</p>";
  if (t.device_clock) {
    out << "<p>The times are the GPU's own, from CUDA events on its stream as each layer's work began and ended; "
           "on a launch-bound step they include the GPU's waits for the host between kernels.</p>";
  }
  const double phases = t.per_step_ms(t.forward_phase_ns + t.backward_phase_ns);
  const double peak = s.machine_peak ? s.machine_peak->gemm_gflops : 0;
  std::vector<svg::Part> parts;
  std::ostringstream rows;
  const double copy = s.machine_peak ? s.machine_peak->memory_gbps : 0;
  // "12.25 (39%)": bytes over time, and its share of the measured copy's rate
  const auto bandwidth = [&](double bytes, int64_t ns) {
    const double gbps = LayerTime::per_ns(bytes, ns);
    return gbps > 0 ? fixed(gbps, 2) + (copy > 0 ? " (" + percent(gbps / copy) + ")" : "") : std::string("-");
  };
  const auto row = [&](const std::string& name, const LayerTime& l) {
    const double ms = t.per_step_ms(l.forward_ns + l.backward_ns), share = phases > 0 ? ms / phases : 0.0;
    const double flops = l.forward_flops + l.backward_flops;
    const double gflops = ms > 0 ? t.per_step(flops) * 1e-9 / (ms * 1e-3) : 0.0;
    parts.push_back({name, share, name + ": " + percent(share) + " of forward and backward, " + fixed(ms) + " ms"});
    rows << "<tr><td>" << svg::escape(name) << "</td><td>" << fixed(t.per_step_ms(l.forward_ns)) << "</td><td>"
         << fixed(t.per_step_ms(l.backward_ns)) << "</td><td>" << percent(share) << "</td><td>"
         << (flops > 0 ? fixed(t.per_step(flops) * 1e-9, 4) : "-") << "</td><td>" << (flops > 0 ? fixed(gflops, 1) : "-")
         << "</td><td>" << (flops > 0 && peak > 0 ? percent(gflops / peak) : "-") << "</td><td>"
         << bandwidth(l.forward_bytes, l.forward_ns) << "</td><td>" << bandwidth(l.backward_bytes, l.backward_ns) << "</td></tr>";
  };
  for (const LayerTime* l : t.by_time()) row(l->name, *l);
  row("(unattributed)", LayerTime{"", t.unattributed_forward_ns(), t.unattributed_backward_ns()});
  svg::ChartOptions bar;
  bar.title = "Where forward and backward go, layer by layer (share of the probed steps' forward and backward)";
  bar.height = 150;
  out << "<p>" << t.probed_steps << " steps probed, one in " << t.every << (t.auto_every ? " (auto)" : "");
  if (t.probe_warmups > 0) {
    out << ", and " << t.probe_warmups << " warm-up steps before them, listened to the same way (their figures dropped, their "
        << "time counted); each probe with its warm-up ";
  } else {
    out << ", each ";
  }
  out << percent(t.probe_cost) << " slower than unprobed steps: " << percent(t.run_cost()) << " of the run's step time; "
      << fixed(t.step_flops() * 1e-9, 4) << " GFLOP a step.";
  if (s.machine_peak) {
    out << " This machine's measured peak: " << fixed(peak, 1) << " GFLOP/s (a matrix product on " << s.machine_peak->ran_on()
        << "), " << fixed(s.machine_peak->memory_gbps, 1) << " GB/s (a copy; a layer's forward or backward that moves the "
        << "least bytes it must at half of that or more, nearer it than its arithmetic to the matrix product's, is "
        << "bandwidth-bound).";
  }
  out << "</p>" << svg::stacked_bar(parts, bar)
      << "<table><tr><th>layer</th><th>forward ms</th><th>backward ms</th><th>share</th><th>GFLOP a step</th>"
         "<th>GFLOP/s</th><th>of the peak</th><th>forward GB/s (of the copy's)</th><th>backward GB/s (of the copy's)</th></tr>"
      << rows.str() << "</table>";
  return out.str();
}

namespace {

std::string megabytes(double bytes) { return fixed(bytes * 1e-6, 1) + " MB"; }

}  // namespace

std::string memory_section(const RunSummary& s) {
  const MemorySummary& m = s.memory;
  std::ostringstream out;
  out << "<h2>Memory</h2>";
  if (m.steps == 0) return out.str() + "<p>Not counted: " + svg::escape(m.why_not) + ".</p>";
  const bool cpu = m.device.empty() || m.device == "cpu";
  out << "<p>" << (cpu ? "The CPU tensors the counting allocator saw" : "The bytes the CUDA caching allocator allocated on " + svg::escape(m.device))
      << ", over " << m.steps << " measured steps: a step ends holding " << megabytes(static_cast<double>(m.held_at_end))
      << " more than the fit began with (" << megabytes(static_cast<double>(m.held_at_start)) << " after the first), holds up to "
      << megabytes(static_cast<double>(m.step_peak_bytes)) << " more within it than at its start (mean "
      << megabytes(m.mean_step_peak_bytes) << ") and allocates " << megabytes(m.allocated_per_step)
      << "; the process's resident peak was " << megabytes(static_cast<double>(m.resident_peak)) << ".</p>";
  const MemoryGrowth& g = m.growth;
  if (g.steps > 0) {
    out << "<p>What a step ends holding grows by " << fixed(g.bytes_per_step * 1e-6, 4) << " MB a step (99 %: "
        << fixed(g.low * 1e-6, 4) << " to " << fixed(g.high * 1e-6, 4) << ") over the last " << g.steps << " steps: "
        << (g.leak ? "<strong>a leak</strong>, something keeps memory of every step (a list of losses with their graphs, "
                     "a cache without a bound)"
                   : "no leak")
        << ".</p>";
  } else {
    out << "<p>Too few steps to judge growth (fewer than " << MemoryGrowth::kFewestSteps << ").</p>";
  }
  std::ostringstream rows;
  std::vector<svg::Part> parts;
  for (Phase p : all_phases()) {
    const auto at = m.phases.find(std::string(phase_name(p)));
    if (at == m.phases.end()) continue;
    const PhaseMemory& pm = at->second;
    rows << "<tr><td>" << phase_name(p) << "</td><td>" << fixed(static_cast<double>(pm.peak_bytes) * 1e-6, 2) << "</td><td>"
         << fixed(pm.mean_peak_bytes * 1e-6, 2) << "</td><td>" << fixed(pm.allocated_bytes * 1e-6, 2) << "</td></tr>";
    if (m.allocated_per_step > 0) {
      const double share = pm.allocated_bytes / m.allocated_per_step;
      parts.push_back({std::string(phase_name(p)), share, std::string(phase_name(p)) + ": " + megabytes(pm.allocated_bytes) + " a step"});
    }
  }
  svg::ChartOptions bar;
  bar.title = "Where a step allocates (share of its bytes allocated, by phase)";
  bar.height = 150;
  if (!parts.empty()) out << svg::stacked_bar(parts, bar);
  out << "<table><tr><th>phase</th><th>peak above the step's start, MB</th><th>mean peak, MB</th><th>allocated a step, MB</th></tr>"
      << rows.str() << "</table>";
  return out.str();
}

}  // namespace fitscope::report
