#include "fitscope/summary/summary_printout.hpp"

#include "fitscope/summary/detail/percent.hpp"
#include "thread_choice_text.hpp"

#include <algorithm>
#include <cstdio>

namespace fitscope {

std::string format_gpu(const RunSummary& s) {
  char part[160];
  std::string out;
  if (s.gpu_utilization) {
    std::snprintf(part, sizeof part, "GPU: %.1f %% busy (mean of %lld NVML samples), %.0f MiB peak memory in use (every process's)\n",
                  *s.gpu_utilization, static_cast<long long>(s.gpu_samples), s.gpu_memory_peak_mb.value_or(0));
    out += part;
  } else if (!s.gpu_why_not.empty()) {
    out += "GPU: utilization not sampled: " + s.gpu_why_not + "\n";
  }
  if (const auto& g = s.cuda_graph) {
    out += "CUDA graph (" + g->mode + "): " + (g->kept ? "the step replayed" : "eager") + ": " + g->reason;
    if (g->checked_steps > 0) {
      std::snprintf(part, sizeof part, "; %lld steps run both ways agreed within %.1e (loss) and %.1e (weights)",
                    static_cast<long long>(g->checked_steps), g->max_loss_difference, g->max_weight_difference);
      out += part;
    }
    if (g->kept && g->eager_steps > 0) {
      out += "; " + std::to_string(g->eager_steps) + " batch" + (g->eager_steps == 1 ? "" : "es") +
             " of another shape ran eagerly";
    }
    out += "\n";
  }
  if (!s.device_timing) return out;
  std::snprintf(part, sizeof part, "On the GPU (CUDA events, read lazily, on 1 measured step in %lld): step %.3f ms;",
                static_cast<long long>(s.device_timing->sampled_every), s.device_timing->step_ms_mean);
  out += part;
  for (const std::string& name : s.device_timing->phases_measured) {
    std::snprintf(part, sizeof part, " %s %.3f", name.c_str(), s.device_timing->phases.at(name).mean_ms);
    out += part;
  }
  out += " ms (means)\n";
  const DeviceTimingSummary& d = *s.device_timing;
  if (d.busy_ms && d.idle_fraction) {
    std::snprintf(part, sizeof part,
                  "GPU's own work per step %.3f ms (%lld of %lld probes with the step queued ahead): idle %s of the "
                  "%.3f ms step, waiting for the host\n",
                  *d.busy_ms, static_cast<long long>(d.probes_valid), static_cast<long long>(d.probes_made),
                  detail::format_percent(*d.idle_fraction, 0).c_str(), s.step_ms.p50);
    out += part;
  } else if (d.busy_ms && s.cuda_graph && s.cuda_graph->kept) {
    std::snprintf(part, sizeof part,
                  "GPU's own work per eager step %.3f ms (probed in warm-up, before the capture); the replayed step's "
                  "device time is the graph phase above\n",
                  *d.busy_ms);
    out += part;
  } else if (d.probes_made > 0) {
    std::snprintf(part, sizeof part, "GPU's own work per step: not measured (none of %lld probes had the step queued ahead)\n",
                  static_cast<long long>(d.probes_made));
    out += part;
  }
  return out;
}

std::string format_threads(const RunSummary& s) {
  const ThreadChoice& t = s.threads;
  char part[160];
  std::snprintf(part, sizeof part, "Threads: intra-op %lld, BLAS %lld (%s) on %lld core%s",
                static_cast<long long>(t.setting.intra_op), static_cast<long long>(t.setting.blas), t.blas_library.c_str(),
                static_cast<long long>(t.cores), t.cores == 1 ? "" : "s");
  std::string out = part + (t.cores_limit.empty() ? std::string() : " (" + t.cores_limit + ")") + ", ";
  if (t.chosen_by != "auto") {
    out += "set by ThreadOptions::intra_op";
  } else if (t.search_needs_steps > 0) {
    out += "auto: the default, unmeasured (a search pays for itself from " + std::to_string(t.search_needs_steps) +
           " steps; this run is shorter)";
  } else {
    out += t.candidates.empty() ? "auto: the only candidate on this process's cores, nothing to measure" : "measured in warm-up:";
  }
  for (std::size_t i = 0; i < t.candidates.size(); ++i) {
    const ThreadCandidate& c = t.candidates[i];
    std::snprintf(part, sizeof part, "%s %lldx%lld %.3f ms", i == 0 ? " intra-op x BLAS" : ",",
                  static_cast<long long>(c.setting.intra_op), static_cast<long long>(c.setting.blas), c.step_ms);
    out += part;
  }
  const std::string reason = detail::kept_reason(t), rechecks = detail::rechecks_text(t);
  out += (reason.empty() ? "" : "; " + reason) + (rechecks.empty() ? "" : "; " + rechecks) + "\n";
  if (s.cpu.pools.empty()) return out;
  std::snprintf(part, sizeof part, "CPU: %.2f of %lld cores busy:", s.cpu.process_cores, static_cast<long long>(s.cpu.cores));
  out += part;
  for (const PoolCpu& p : s.cpu.pools) {
    if (p.threads == 0 && p.cores < 0.005) continue;
    std::snprintf(part, sizeof part, " %s %.2f (%lld)", p.pool.c_str(), p.cores, static_cast<long long>(p.threads));
    out += part;
  }
  out += "  (cores, threads)";
  if (s.cpu.others_cores >= 0.005) {
    std::snprintf(part, sizeof part, "; other processes %.2f", s.cpu.others_cores);
    out += part;
  }
  out += "\n";
  if (s.cpu.throttled_periods > 0) {
    std::snprintf(part, sizeof part, "Throttled: the cgroup's CPU quota held the process back in %lld periods, %.2f s in all\n",
                  static_cast<long long>(s.cpu.throttled_periods), s.cpu.throttled_s);
    out += part;
  }
  return out;
}

std::string format_ranks(const RunSummary& s) {
  if (s.ranks.size() < 2) return {};
  std::string out = "Ranks (step p50 / p99, busy p50 = step without comm):\n";
  char line[160];
  for (const RankSummary& r : s.ranks) {
    const bool straggles = std::find(s.stragglers.begin(), s.stragglers.end(), r.rank) != s.stragglers.end();
    // a straggler's phase (slow in most steps, or at times: now and then), within 80 columns
    const std::string why = r.straggles.empty() ? (straggles ? "   straggler" : "")
                                                : (r.straggles == "most steps" ? "   slow: " : "   at times: ") + r.straggle_phase;
    std::snprintf(line, sizeof line, "  rank %-4lld %9.3f ms %9.3f ms   busy %9.3f ms%s\n", static_cast<long long>(r.rank),
                  r.step_ms_p50, r.step_ms_p99, r.busy_ms_p50, why.c_str());
    out += line;
  }
  if (const auto& c = s.communication) {
    std::snprintf(line, sizeof line,
                  "Communication: %.3f ms in flight per step, %.3f ms of it exposed (%.0f%%), the rest hidden behind backward\n",
                  c->total_ms_mean, c->exposed_ms_mean, 100 * c->exposed_fraction);
    out += line;
    if (!c->bucket_bytes.empty()) {
      out += "  gradient buckets, in launch order:";
      for (int64_t bytes : c->bucket_bytes) {
        std::snprintf(line, sizeof line, " %.1f KiB", static_cast<double>(bytes) / 1024);
        out += line;
      }
      out += "\n";
    }
  }
  return out;
}

/// The steps' tensor memory in one line: held, the step's peak, allocated, the resident peak, growth.
std::string format_memory(const RunSummary& s) {
  const MemorySummary& m = s.memory;
  if (m.steps == 0) return {};
  char line[300];
  std::snprintf(line, sizeof line,
                "Memory: a step ends holding %.1f MB of tensors more than the fit began with, and holds up to %.1f MB more "
                "within it (%.1f MB allocated a step); resident peak %.0f MB",
                static_cast<double>(m.held_at_end) * 1e-6, static_cast<double>(m.step_peak_bytes) * 1e-6,
                m.allocated_per_step * 1e-6, static_cast<double>(m.resident_peak) * 1e-6);
  std::string out = m.device.empty() || m.device == "cpu" ? std::string(line) : "Memory (" + m.device + ", the caching allocator)" + (line + 6);
  if (m.growth.steps > 0) {
    std::snprintf(line, sizeof line, "; growth %+.3f MB a step (99%%: %+.3f to %+.3f) over the last %lld steps%s",
                  m.growth.bytes_per_step * 1e-6, m.growth.low * 1e-6, m.growth.high * 1e-6,
                  static_cast<long long>(m.growth.steps), m.growth.leak ? ": a leak" : "");
    out += line;
  }
  return out + "\n";
}

/// The layers that took the most of the probed steps' forward and backward, and what no layer claims.
std::string format_layers(const RunSummary& s) {
  const LayerTimes& t = s.layers;
  if (t.probed_steps == 0) return t.why_not.empty() ? std::string() : "Layers: none probed: " + t.why_not + "\n";
  char line[200];
  std::snprintf(line, sizeof line, "Layers%s: %lld %s probed, 1 in %lld%s (each %+.0f %%%s: %.1f %% of the run); %.3g GFLOP a step\n",
                t.device_clock ? " (the device's times, CUDA events)" : "", static_cast<long long>(t.probed_steps),
                t.probed_steps == 1 ? "step" : "steps", static_cast<long long>(t.every), t.auto_every ? " (auto)" : "", t.probe_cost * 100,
                t.probe_warmups > 0 ? " with its warm-up step" : "", t.run_cost() * 100, t.step_flops() * 1e-9);
  std::string out = line;
  const double peak = s.machine_peak ? s.machine_peak->gemm_gflops : 0;
  if (peak > 0) {
    std::snprintf(line, sizeof line, "  measured peak: %.1f GFLOP/s (a matrix product, %s%s), %.1f GB/s\n", peak,
                  s.machine_peak->ran_on().c_str(), s.machine_peak->cached ? ", cached" : "", s.machine_peak->memory_gbps);
    out += line;
  }
  const double phases_ms = t.per_step_ms(t.forward_phase_ns + t.backward_phase_ns);
  constexpr std::size_t kShown = 5;
  constexpr int kNumbers = 2 + 10 + 1 + 10 + 1 + 7 + 1 + 9 + 1 + 6, kMaxName = 80 - kNumbers;
  const std::vector<const LayerTime*> top = t.by_time();
  const std::size_t shown = std::min(top.size(), kShown);
  int name_width = static_cast<int>(std::string("(unattributed)").size());
  for (std::size_t i = 0; i < shown; ++i) name_width = std::max(name_width, static_cast<int>(top[i]->name.size()));
  name_width = std::min(name_width, kMaxName);
  std::snprintf(line, sizeof line, "  %-*s %10s %10s %7s %9s %6s\n", name_width, "layer", "fwd ms", "bwd ms", "share", "GFLOP/s",
                "peak");
  out += line;
  const auto row = [&](const std::string& name, int64_t forward_ns, int64_t backward_ns, double flops) {
    const double ms = t.per_step_ms(forward_ns + backward_ns);
    char rate[32] = "-", of_peak[32] = "-";
    if (flops > 0 && ms > 0) {
      const double gflops = t.per_step(flops) * 1e-9 / (ms * 1e-3);
      std::snprintf(rate, sizeof rate, "%.1f", gflops);
      if (peak > 0) std::snprintf(of_peak, sizeof of_peak, "%s", detail::format_percent(gflops / peak, 0).c_str());
    }
    if (static_cast<int>(name.size()) > name_width) out += "  " + name + "\n";
    std::snprintf(line, sizeof line, "  %-*s %10.3f %10.3f %6.1f%% %9s %6s\n", name_width,
                  static_cast<int>(name.size()) > name_width ? "" : name.c_str(), t.per_step_ms(forward_ns),
                  t.per_step_ms(backward_ns), phases_ms > 0 ? ms / phases_ms * 100 : 0.0, rate, of_peak);
    out += line;
  };
  for (std::size_t i = 0; i < shown; ++i) {
    row(top[i]->name, top[i]->forward_ns, top[i]->backward_ns, top[i]->forward_flops + top[i]->backward_flops);
  }
  if (top.size() > shown) {
    int64_t forward = 0, backward = 0;
    double flops = 0;
    for (std::size_t i = shown; i < top.size(); ++i) {
      forward += top[i]->forward_ns;
      backward += top[i]->backward_ns;
      flops += top[i]->forward_flops + top[i]->backward_flops;
    }
    row("(" + std::to_string(top.size() - shown) + " more)", forward, backward, flops);
  }
  row("(unattributed)", t.unattributed_forward_ns(), t.unattributed_backward_ns(), 0);
  return out;
}

std::string format_breakdown(const RunSummary& s) {
  std::string out;
  char line[160];
  std::snprintf(line, sizeof line,
                "Step time over %lld steps (%lld warm-up steps left out): p50 %.3f ms  p90 %.3f ms  "
                "p99 %.3f ms  max %.3f ms  -  %.0f samples/s",
                static_cast<long long>(s.measured_steps), static_cast<long long>(s.warmup_steps), s.step_ms.p50,
                s.step_ms.p90, s.step_ms.p99, s.step_ms.max, s.samples_per_s);
  out += line;
  if (s.world_size > 1) {
    std::snprintf(line, sizeof line, " per rank, %.0f for the job of %lld ranks", s.job_samples_per_s,
                  static_cast<long long>(s.world_size));
    out += line;
  }
  out += "\n";
  const bool memory = s.memory.steps > 0;  // a peak column: the most tensor memory a phase held above its step's start
  std::snprintf(line, sizeof line, "  %-11s %10s %10s %10s %7s%s\n", "phase", "mean ms", "p50 ms", "p99 ms", "share",
                memory ? "  peak MB" : "");
  out += line;
  for (Phase p : all_phases()) {
    const std::string name(phase_name(p));
    const PhaseSummary& d = s.phases.at(name);
    if (p == Phase::graph && d.mean_ms == 0) continue;  // a row only where a captured step replayed
    std::snprintf(line, sizeof line, "  %-11s %10.3f %10.3f %10.3f %6.1f%%", name.c_str(), d.mean_ms, d.p50_ms, d.p99_ms,
                  d.share * 100);
    out += line;
    if (memory) {
      const auto at = s.memory.phases.find(name);
      std::snprintf(line, sizeof line, " %8.2f", at == s.memory.phases.end() ? 0.0 : static_cast<double>(at->second.peak_bytes) * 1e-6);
      out += line;
    }
    out += "\n";
  }
  out += format_memory(s);
  out += format_layers(s);
  if (!s.callbacks.empty()) out += "Callbacks by total time (mode, calls, mean ms, p99 ms, total ms):\n";
  // the name column as wide as the longest name, up to what leaves the row within 80 columns; a longer
  // name has a line of its own above its figures
  constexpr int kNumbers = 43, kMaxName = 80 - 2 - kNumbers;
  const std::size_t shown = std::min<std::size_t>(s.callbacks.size(), 5);
  int name_width = 0;
  for (std::size_t i = 0; i < shown; ++i) {
    name_width = std::max(name_width, static_cast<int>((s.callbacks[i].name + "." + s.callbacks[i].hook).size()));
  }
  name_width = std::min(name_width, kMaxName);
  for (std::size_t i = 0; i < shown; ++i) {
    const CallbackSummary& c = s.callbacks[i];
    const std::string name = c.name + "." + c.hook;
    if (static_cast<int>(name.size()) > name_width) out += "  " + name + "\n";
    std::snprintf(line, sizeof line, "  %-*s %-5s %6lld %9.3f %9.3f %9.1f\n", name_width,
                  static_cast<int>(name.size()) > name_width ? "" : name.c_str(), c.mode.c_str(),
                  static_cast<long long>(c.calls), c.mean_ms, c.p99_ms, c.total_ms);
    out += line;
  }
  const Verdict& v = s.verdict;
  out += "Verdict: " + verdict_headline(v, s.measured_steps) + ". " + v.advice + "\n";
  if (!v.contention.empty()) out += "Contention: " + v.contention + "\n";
  if (!v.stragglers.empty()) out += "Stragglers: " + v.stragglers + "\n";
  if (!v.outside_steps.empty()) out += "Outside the steps: " + v.outside_steps + "\n";
  return out;
}

std::string format_run_time(const RunSummary& s) {
  const RunTime& r = s.run;
  const double wall = s.wall_s > 0 ? s.wall_s : 1;
  char line[256];
  std::snprintf(line, sizeof line,
                "Wall time %.2f s: start-up %.2f s (%.0f%%), training steps %.2f s (%.0f%%), validation %.2f s (%.0f%%), "
                "epoch ends %.2f s (%.0f%%), shutdown %.2f s (%.0f%%), unaccounted %.2f s (%.1f%%)%s\n",
                s.wall_s, r.startup, 100 * r.startup / wall, r.training_steps, 100 * r.training_steps / wall,
                r.validation, 100 * r.validation / wall, r.epoch_end, 100 * r.epoch_end / wall, r.shutdown,
                100 * r.shutdown / wall, r.unaccounted, 100 * r.unaccounted / wall,
                s.interrupted ? "; interrupted by a signal" : "");
  std::string out = line;
  if (s.restarts && !s.restarts->events.empty()) {
    const RestartsSummary& k = *s.restarts;
    std::snprintf(line, sizeof line, "Restarts: %zu, %lld steps redone, %.2f s lost (%.1f%% of the job's %.2f s)\n",
                  k.events.size(), static_cast<long long>(k.steps_redone), k.lost_s, 100 * k.lost_fraction, k.job_wall_s);
    out += line;
    for (std::size_t i = 0; i < k.events.size(); ++i) {
      const RestartEvent& e = k.events[i];
      out += "  restart " + std::to_string(i + 1) + ": resumed from step " + std::to_string(e.resumed_from_step) +
             (e.failed_at_step ? " (failed at step " + std::to_string(*e.failed_at_step) + ")" : "") + " after: " + e.reason + "\n";
    }
  }
  return out;
}

namespace {

/// The columns of `text`: its UTF-8 characters.
std::size_t columns(const std::string& text) {
  std::size_t n = 0;
  for (const char c : text) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

/// The byte offset of `text`'s first `count` columns.
std::size_t offset_of_column(const std::string& text, std::size_t count) {
  std::size_t seen = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) continue;
    if (seen++ == count) return i;
  }
  return text.size();
}

/// One line wrapped to `width` (no newline in it), each piece ending in a newline.
std::string wrap_line(std::string rest, std::size_t width) {
  const std::size_t indent = std::min(rest.find_first_not_of(' '), rest.size());
  const std::string continuation(std::min(indent + 2, width / 2), ' ');
  std::size_t lead = indent;  // the indentation of the piece in `rest`
  std::string out;
  while (columns(rest) > width) {
    std::size_t cut = rest.rfind(' ', offset_of_column(rest, width));
    if (cut == std::string::npos || cut <= lead) cut = rest.find(' ', offset_of_column(rest, width));  // a word wider than the line
    if (cut == std::string::npos) break;
    const std::size_t end = rest.find_last_not_of(' ', cut);
    const std::size_t next = rest.find_first_not_of(' ', cut);
    if (end == std::string::npos || end < lead || next == std::string::npos) break;
    out += rest.substr(0, end + 1) + "\n";
    rest = continuation + rest.substr(next);
    lead = continuation.size();
  }
  return out + rest + "\n";
}

}  // namespace

std::string wrap_to_width(const std::string& text, std::size_t width) {
  std::string out;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = text.find('\n', start);
    const std::string line = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    const std::string wrapped = wrap_line(line, std::max<std::size_t>(width, 20));
    out += end == std::string::npos ? wrapped.substr(0, wrapped.size() - 1) : wrapped;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

std::string format_summary(const RunSummary& s) {
  std::string out = format_threads(s) + format_breakdown(s) + format_ranks(s);
  char line[200];
  if (s.loader.workers > 0) {
    const LoaderStats& l = s.loader;
    std::snprintf(line, sizeof line, ", mean queue depth %.2f when the step asked; a batch built in %.2f ms (%.2f ms CPU)\n",
                  l.mean_queue_depth, l.batch_build_ms, l.batch_build_cpu_ms);
    out += "Loader: " + setting_text(l) + line;
    if (l.changes.size() > 1) {
      const std::size_t n = l.changes.size() - 1;
      std::snprintf(line, sizeof line, "  auto changed the loader %zu %s; the last, at %.1f s: ", n, n == 1 ? "time" : "times",
                    l.changes.back().at_s);
      out += line + l.changes.back().why + "\n";
    }
  } else {
    out += "Loader: batches built on the training thread (" + training_thread_reason(s.loader) + ")\n";
  }
  out += format_gpu(s) + format_run_time(s);
  if (const auto acc = s.logs.get("val_accuracy")) {
    std::snprintf(line, sizeof line, "Final validation accuracy: %g\n", *acc);
    out += line;
  }
  return out;
}

}  // namespace fitscope
