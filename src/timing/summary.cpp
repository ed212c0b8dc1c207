#include "fitscope/timing/summary.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <nlohmann/json.hpp>

namespace fitscope {

std::vector<const CallbackTiming*> by_total_time(const std::vector<CallbackTiming>& timings) {
  std::vector<const CallbackTiming*> out;
  for (const auto& t : timings) out.push_back(&t);
  std::stable_sort(out.begin(), out.end(), [](const CallbackTiming* a, const CallbackTiming* b) {
    return a->durations.mean() * a->durations.count() > b->durations.mean() * b->durations.count();
  });
  return out;
}

namespace {

/// Gradient communication per step: in flight, and exposed (the `comm` phase), in ms.
struct Communication {
  double total_ms, exposed_ms;
  double exposed_fraction() const { return total_ms > 0 ? exposed_ms / total_ms : 0.0; }
};
std::optional<Communication> communication_of(const PhaseStats& stats, const RunInfo& info) {
  if (!info.communication || info.communication->count() == 0) return std::nullopt;
  return Communication{info.communication->mean() * 1e-6, stats.phase(Phase::comm).mean_ms};
}

}  // namespace

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
  json callbacks = json::array();
  for (const CallbackTiming* t : by_total_time(info.callbacks)) {
    const auto& d = t->durations;
    callbacks.push_back({{"name", t->name},
                         {"hook", std::string(hook_name(t->hook))},
                         {"mode", t->mode},
                         {"calls", d.count()},
                         {"mean_ms", d.mean() * 1e-6},
                         {"p50_ms", d.quantile(0.5) * 1e-6},
                         {"p99_ms", d.quantile(0.99) * 1e-6},
                         {"total_ms", d.mean() * d.count() * 1e-6},
                         {"stall_ms", t->stall_ns * 1e-6}});
  }
  // per rank; each phase's mean over ranks and max over ranks (of the per-rank means)
  json ranks = json::array({{{"rank", 0}, {"step_ms_p50", step.p50_ms}, {"step_ms_p99", step.p99_ms},
                             {"busy_ms_p50", step.p50_ms}}});  // alone: no gradient communication
  json across = json::object();
  if (info.ranks) {
    ranks = json::array();
    for (int64_t r = 0; r < info.ranks->world_size(); ++r) {
      const Distribution d = info.ranks->stats(r).step();
      ranks.push_back({{"rank", r}, {"step_ms_p50", d.p50_ms}, {"step_ms_p99", d.p99_ms},
                       {"busy_ms_p50", info.ranks->busy_p50_ms(r)}});
    }
  }
  for (Phase p : all_phases()) {
    double sum = 0, most = 0;
    const int64_t n = info.ranks ? info.ranks->world_size() : 1;
    for (int64_t r = 0; r < n; ++r) {
      const double mean = (info.ranks ? info.ranks->stats(r) : stats).phase(p).mean_ms;
      sum += mean;
      most = std::max(most, mean);
    }
    across[std::string(phase_name(p))] = {{"mean_ms", sum / n}, {"max_ms", most}};
  }
  json device = nullptr;  // the phases as the GPU ran them (CUDA events)
  if (info.device_timer && info.device_timer->stats().measured_steps() > 0) {
    const PhaseStats& d = info.device_timer->stats();
    json measured = json::array(), timed = json::object();
    for (Phase p : info.device_timer->measured_phases()) {
      const Distribution t = d.phase(p);
      measured.push_back(std::string(phase_name(p)));
      timed[std::string(phase_name(p))] = {{"mean_ms", t.mean_ms}, {"p50_ms", t.p50_ms}, {"p99_ms", t.p99_ms}};
    }
    const Distribution span = d.step();
    device = {{"source", "cuda_events"},
              {"phases_measured", measured},
              {"step_ms", {{"mean", span.mean_ms}, {"p50", span.p50_ms}, {"p99", span.p99_ms}}},
              {"phases", timed},
              {"steps_resolved_in_loop", info.device_timer->resolved_in_loop()},
              {"steps_resolved_at_end", info.device_timer->resolved_at_finish()}};
  }
  json communication = nullptr;
  if (const auto c = communication_of(stats, info)) {
    communication = {{"total_ms_mean", c->total_ms},
                     {"exposed_ms_mean", c->exposed_ms},
                     {"exposed_fraction", c->exposed_fraction()},
                     {"bucket_bytes", info.gradient_buckets}};
  }
  json candidates = json::array();
  for (const ThreadCandidate& c : info.threads.candidates) {
    candidates.push_back({{"intra_op", c.setting.intra_op}, {"blas", c.setting.blas}, {"step_ms", c.step_ms}});
  }
  json pools = json::object();
  for (const PoolCpu& p : info.cpu.pools) pools[p.pool] = {{"threads", p.threads}, {"cores", p.cores}};
  json out = {
      {"model", info.model},
      {"epochs", info.epochs},
      {"steps", stats.steps()},
      {"warmup_steps", std::min(stats.warmup_steps(), stats.steps())},
      {"measured_steps", stats.measured_steps()},
      {"wall_s", info.wall_s},
      {"samples_per_s", stats.samples_per_s()},
      {"threads",
       {{"intra_op", info.threads.setting.intra_op},
        {"blas", info.threads.setting.blas},
        {"blas_library", info.threads.blas_library},
        {"cores", info.threads.cores},
        {"chosen_by", info.threads.chosen_by},
        {"search_steps", info.threads.search_steps},
        {"candidates", candidates}}},
      {"logs", logs},
      {"world_size", info.world_size},
      {"batch_size", info.batch_size},
      {"device", info.device},
      {"step_ms",
       {{"mean", step.mean_ms}, {"p50", step.p50_ms}, {"p90", step.p90_ms}, {"p99", step.p99_ms},
        {"max", step.max_ms}}},
      {"phases", phases},
      {"callbacks", callbacks},
      {"warnings", info.warnings},
      {"loader",
       {{"workers", info.loader.workers},
        {"prefetch", info.loader.prefetch},
        {"batches", info.loader.batches},
        {"mean_queue_depth", info.loader.mean_queue_depth}}},
      {"cpu_utilization",
       {{"process_cores", info.cpu.process_cores},
        {"training_thread_cores", info.cpu.training_cores},
        {"other_threads_cores", info.cpu.other_cores},
        {"machine_share", info.cpu.machine_share},
        {"cores", info.cpu.cores},
        {"pools", pools}}},
      {"gpu_utilization", info.gpu.sampled ? json(info.gpu.busy_percent_mean) : json(nullptr)},
      {"gpu_memory_peak_mb", info.gpu.sampled ? json(info.gpu.memory_peak_mb) : json(nullptr)},
      {"gpu_samples", info.gpu.samples},
      {"ranks", ranks},
      {"stragglers", info.ranks ? info.ranks->stragglers() : std::vector<int64_t>{}},
      {"straggler_margin", kStragglerMargin},
      {"phases_across_ranks", across},
      {"communication", communication},
      {"device_timing", device},
      {"clock_overhead_ns_per_step", info.clock_overhead_ns_per_step},
      {"verdict",
       {{"bound", verdict.bound}, {"level", verdict.level}, {"share", verdict.share},
        {"advice", verdict.advice}, {"contention", verdict.contention}}},
  };
  return out.dump(2) + "\n";
}

std::string format_gpu(const RunInfo& info) {
  char part[160];
  std::string out;
  if (info.gpu.sampled) {
    std::snprintf(part, sizeof part, "GPU: %.1f %% busy (mean of %lld NVML samples), %.0f MiB peak memory in use (every process's)\n",
                  info.gpu.busy_percent_mean, static_cast<long long>(info.gpu.samples), info.gpu.memory_peak_mb);
    out += part;
  } else if (!info.gpu.why_not.empty()) {
    out += "GPU: utilization not sampled: " + info.gpu.why_not + "\n";
  }
  if (!info.device_timer || info.device_timer->stats().measured_steps() == 0) return out;
  const PhaseStats& d = info.device_timer->stats();
  std::snprintf(part, sizeof part, "On the GPU (CUDA events, read lazily): step %.3f ms;", d.step().mean_ms);
  out += part;
  for (Phase p : info.device_timer->measured_phases()) {
    std::snprintf(part, sizeof part, " %s %.3f", std::string(phase_name(p)).c_str(), d.phase(p).mean_ms);
    out += part;
  }
  return out + " ms (means)\n";
}

std::string format_threads(const RunInfo& info) {
  const ThreadChoice& t = info.threads;
  char part[160];
  std::snprintf(part, sizeof part, "Threads: intra-op %lld, BLAS %lld (%s) on %lld cores, %s",
                static_cast<long long>(t.setting.intra_op), static_cast<long long>(t.setting.blas), t.blas_library.c_str(),
                static_cast<long long>(t.cores), t.chosen_by == "auto" ? "measured in warm-up:" : "set by --threads");
  std::string out = part;
  for (const ThreadCandidate& c : t.candidates) {
    std::snprintf(part, sizeof part, " %lldx%lld %.3f ms%s", static_cast<long long>(c.setting.intra_op),
                  static_cast<long long>(c.setting.blas), c.step_ms, c.setting == t.setting ? " (kept)" : "");
    out += part;
  }
  out += "\n";
  if (info.cpu.pools.empty()) return out;
  std::snprintf(part, sizeof part, "CPU: %.2f of %lld cores busy:", info.cpu.process_cores, static_cast<long long>(info.cpu.cores));
  out += part;
  for (const PoolCpu& p : info.cpu.pools) {
    if (p.threads == 0 && p.cores < 0.005) continue;
    std::snprintf(part, sizeof part, " %s %.2f (%lld)", p.pool.c_str(), p.cores, static_cast<long long>(p.threads));
    out += part;
  }
  return out + "  (cores, threads)\n";
}

std::string format_ranks(const PhaseStats& stats, const RunInfo& info) {
  if (!info.ranks || info.ranks->world_size() < 2) return {};
  std::string out = "Ranks (step p50 / p99, busy p50 = step without comm):\n";
  char line[160];
  const auto slow = info.ranks->stragglers();
  for (int64_t r = 0; r < info.ranks->world_size(); ++r) {
    const Distribution d = info.ranks->stats(r).step();
    const bool straggles = std::find(slow.begin(), slow.end(), r) != slow.end();
    std::snprintf(line, sizeof line, "  rank %-4lld %9.3f ms %9.3f ms   busy %9.3f ms%s\n", static_cast<long long>(r),
                  d.p50_ms, d.p99_ms, info.ranks->busy_p50_ms(r), straggles ? "   straggler" : "");
    out += line;
  }
  if (const auto c = communication_of(stats, info)) {
    std::snprintf(line, sizeof line,
                  "Communication: %.3f ms in flight per step, %.3f ms of it exposed (%.0f%%), the rest hidden behind backward\n",
                  c->total_ms, c->exposed_ms, 100 * c->exposed_fraction());
    out += line;
    if (!info.gradient_buckets.empty()) {
      out += "  gradient buckets, in launch order:";
      for (int64_t bytes : info.gradient_buckets) {
        std::snprintf(line, sizeof line, " %.1f KiB", static_cast<double>(bytes) / 1024);
        out += line;
      }
      out += "\n";
    }
  }
  return out;
}

std::string format_breakdown(const PhaseStats& stats, const Verdict& verdict,
                             const std::vector<CallbackTiming>& callbacks) {
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
  const auto costly = by_total_time(callbacks);
  if (!costly.empty()) out += "Callbacks by total time (mode, calls, mean ms, p99 ms, total ms):\n";
  for (std::size_t i = 0; i < costly.size() && i < 5; ++i) {
    const auto& d = costly[i]->durations;
    std::snprintf(line, sizeof line, "  %-40s %-5s %8lld %10.3f %10.3f %10.1f\n",
                  (costly[i]->name + "." + std::string(hook_name(costly[i]->hook))).c_str(),
                  costly[i]->mode.c_str(), static_cast<long long>(d.count()), d.mean() * 1e-6,
                  d.quantile(0.99) * 1e-6, d.mean() * d.count() * 1e-6);
    out += line;
  }
  out += "Verdict: " + verdict.level + " " + verdict.bound + "-bound (" +
         std::to_string(static_cast<int>(verdict.share * 100 + 0.5)) + "%). " + verdict.advice + "\n";
  if (!verdict.contention.empty()) out += "Contention: " + verdict.contention + "\n";
  return out;
}

}  // namespace fitscope
