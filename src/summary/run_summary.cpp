// RunSummary from a fit's measurements and facts (summary.json's reading and writing:
// run_summary_json.cpp).
#include "fitscope/summary/run_summary.hpp"

#include <algorithm>
#include <cstdio>

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

PhaseSummary phase_summary(const Distribution& d, double share) {
  return {d.mean_ms, d.p50_ms, d.p90_ms, d.p99_ms, d.max_ms, share};
}

MemorySummary summarize_memory(const MemoryStats& m) {
  MemorySummary s;
  s.steps = m.steps();
  s.device = m.device;
  s.why_not = m.why_not.empty() && m.steps() == 0 ? "no step after the warm-up was counted" : m.why_not;
  for (Phase p : all_phases()) {
    const PhaseMemory pm = m.phase(p);
    if (pm.peak_bytes > 0 || pm.allocated_bytes > 0) s.phases[std::string(phase_name(p))] = pm;
  }
  s.step_peak_bytes = m.step_peak_bytes();
  s.mean_step_peak_bytes = m.mean_step_peak_bytes();
  s.allocated_per_step = m.allocated_per_step();
  s.held_at_start = m.held_at_start();
  s.held_at_end = m.held_at_end();
  s.resident_peak = m.resident_peak;
  s.growth = m.growth();
  return s;
}

}  // namespace

RunSummary summarize(const FitMeasurements& m, const RunFacts& facts) {
  RunSummary s;
  const PhaseStats& stats = m.stats;
  s.model = facts.model;
  s.epochs = facts.epochs;
  s.steps = stats.steps();
  s.warmup_steps = std::min(stats.warmup_steps(), stats.steps());
  s.measured_steps = stats.measured_steps();
  s.wall_s = facts.wall_s;
  s.samples_per_s = stats.samples_per_s();
  s.job_samples_per_s = s.samples_per_s * static_cast<double>(m.world_size);  // the ranks step together
  s.run = facts.run;
  s.interrupted = facts.interrupted;
  s.settings = facts.settings;
  s.threads = m.threads;
  s.logs = facts.logs;
  s.world_size = m.world_size;
  s.batch_size = facts.batch_size;
  s.device = facts.device;
  const Distribution step = stats.step();
  s.step_ms = {step.mean_ms, step.p50_ms, step.p90_ms, step.p99_ms, step.max_ms};
  for (Phase p : all_phases()) s.phases[std::string(phase_name(p))] = phase_summary(stats.phase(p), stats.share(p));
  for (const CallbackTiming* t : by_total_time(m.callbacks)) {
    const auto& d = t->durations;
    s.callbacks.push_back({t->name, std::string(hook_name(t->hook)), t->mode, d.count(), d.mean() * 1e-6,
                           d.quantile(0.5) * 1e-6, d.quantile(0.99) * 1e-6, d.mean() * d.count() * 1e-6,
                           t->stall_ns * 1e-6});
  }
  s.warnings = m.warnings;
  s.gpu_samples = facts.gpu.samples;
  if (facts.gpu.sampled) {
    s.gpu_utilization = facts.gpu.busy_percent_mean;
    s.gpu_memory_peak_mb = facts.gpu.memory_peak_mb;
  } else if (!facts.gpu.why_not.empty()) {
    s.gpu_why_not = facts.gpu.why_not;
    s.warnings.push_back("GPU utilization not sampled: " + facts.gpu.why_not);
  }
  s.loader = m.loader;
  s.cpu = m.cpu;
  const bool several = m.world_size > 1;
  const int64_t n = several ? m.ranks.world_size() : 1;
  for (int64_t r = 0; r < n; ++r) {
    const Distribution d = several ? m.ranks.stats(r).step() : step;
    s.ranks.push_back({r, d.p50_ms, d.p99_ms, several ? m.ranks.busy_p50_ms(r) : step.p50_ms, {}, {}});
  }
  const std::vector<StragglerCause> causes = several ? m.ranks.straggler_causes() : std::vector<StragglerCause>{};
  for (const StragglerCause& c : causes) {
    RankSummary& r = s.ranks[static_cast<std::size_t>(c.rank)];
    r.straggles = c.chronic ? "most steps" : "now and then";
    r.straggle_phase = std::string(phase_name(c.phase));
    if (c.chronic) s.stragglers.push_back(c.rank);  // RankTimings::stragglers(), in rank order
  }
  s.straggler_margin = kStragglerMargin;
  for (Phase p : all_phases()) {  // each phase's mean over ranks and max over ranks (of the per-rank means)
    double sum = 0, most = 0;
    for (int64_t r = 0; r < n; ++r) {
      const double mean = (several ? m.ranks.stats(r) : stats).phase(p).mean_ms;
      sum += mean;
      most = std::max(most, mean);
    }
    s.phases_across_ranks[std::string(phase_name(p))] = {sum / static_cast<double>(n), most};
  }
  if (m.communication.count() > 0) {
    CommunicationSummary c;
    c.total_ms_mean = m.communication.mean() * 1e-6;
    c.exposed_ms_mean = stats.phase(Phase::comm).mean_ms;
    c.exposed_fraction = c.total_ms_mean > 0 ? c.exposed_ms_mean / c.total_ms_mean : 0.0;
    c.bucket_bytes = m.gradient_buckets;
    s.communication = c;
  }
  if (m.device_timer && m.device_timer->stats().measured_steps() > 0) {
    const PhaseStats& d = m.device_timer->stats();
    DeviceTimingSummary t;
    for (Phase p : m.device_timer->measured_phases()) {
      t.phases_measured.push_back(std::string(phase_name(p)));
      t.phases[std::string(phase_name(p))] = phase_summary(d.phase(p), d.share(p));
    }
    t.step_ms_mean = d.step().mean_ms;
    t.step_ms_p50 = d.step().p50_ms;
    t.step_ms_p99 = d.step().p99_ms;
    t.steps_resolved_in_loop = m.device_timer->resolved_in_loop();
    t.steps_resolved_at_end = m.device_timer->resolved_at_finish();
    t.busy_ms = m.device_timer->busy_ms();
    // the probes time the eager step's own work: against a replayed step's host time it says nothing
    if (t.busy_ms && stats.step().p50_ms > 0 && !m.cuda_graph.kept) {
      t.idle_fraction = std::max(0.0, 1 - *t.busy_ms / stats.step().p50_ms);
    }
    t.probes_made = m.device_timer->probes_made();
    t.probes_valid = m.device_timer->probes_valid();
    t.sampled_every = m.device_timer->sample_every();
    s.device_timing = t;
  }
  s.clock_overhead_ns_per_step = m.clock_overhead_ns_per_step;
  if (m.cuda_graph.tried || facts.device.rfind("cuda", 0) == 0) s.cuda_graph = m.cuda_graph;
  s.layers = m.layers;
  s.machine_peak = m.peak;
  s.memory = summarize_memory(m.memory);
  if (s.memory.growth.leak) {
    char text[300];
    const MemoryGrowth& g = s.memory.growth;
    std::snprintf(text, sizeof text,
                  "the tensors held at a step's end grow %.3f MB a step over the last %lld steps (99%% interval %.3f to %.3f MB): "
                  "something keeps a tensor of every step (a list of losses with their graphs?)",
                  g.bytes_per_step / 1e6, static_cast<long long>(g.steps), g.low / 1e6, g.high / 1e6);
    s.warnings.push_back(text);
  }

  VerdictContext context;
  context.batch_size = facts.batch_size;
  context.loader = m.loader;
  context.threads = m.threads;
  context.cpu = m.cpu;
  context.callback_mode = facts.callback_mode;
  context.run = facts.run;
  context.validation_split = facts.validation_split;
  context.ranks_on_machine = m.local_world_size;
  if (s.device_timing && s.device_timing->idle_fraction) {
    context.device_busy_ms = *s.device_timing->busy_ms;
    context.device_idle_fraction = *s.device_timing->idle_fraction;
  }
  for (const auto& [key, value] : facts.settings) {
    context.decodes_images = context.decodes_images || (key == "data" && value.rfind("images:", 0) == 0);
    if (key == "precision") context.precision = value;
  }
  if (!s.callbacks.empty()) context.slowest_callback = s.callbacks.front().name + "." + s.callbacks.front().hook;
  context.stragglers = causes;
  context.judged_rank = 0;  // the chief's steps
  context.layers = m.layers;
  context.peak = m.peak;
  context.forward_backward_ms = stats.phase(Phase::forward).mean_ms + stats.phase(Phase::backward).mean_ms;
  s.verdict = judge(stats, context);
  return s;
}

void RunSummary::name_settings(const SettingNames& names) {
  if (!names) return;
  for (std::string* text : {&verdict.advice, &verdict.contention, &verdict.machine, &verdict.outside_steps, &verdict.stragglers}) *text = names(*text);
  for (Advice& action : verdict.actions) action.knob = names(action.knob);
  for (std::string& warning : warnings) warning = names(warning);
}

}  // namespace fitscope
