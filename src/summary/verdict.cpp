#include "fitscope/summary/verdict.hpp"

#include "fitscope/summary/detail/percent.hpp"
#include "verdict_bounds.hpp"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace fitscope {
namespace {

std::string ratio(double r) {
  char text[16];
  std::snprintf(text, sizeof text, "%.2fx", r);
  return text;
}

/// The measured candidate of `setting`; null when it was not measured.
const ThreadCandidate* measured(const ThreadChoice& t, const ThreadSetting& setting) {
  for (const auto& c : t.candidates) {
    if (c.setting == setting && c.step_ms > 0) return &c;
  }
  return nullptr;
}

std::string cores_text(double cores) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", cores);
  return text;
}

/// The share of the run's wall time the cgroup's CPU quota may hold the threads back before the verdict
/// names it: a stalled step lasts a quota period's rest (tens of ms), which no thread setting hides.
constexpr double kThrottledShare = 0.02;
/// The cores other processes may keep busy on this process's CPUs before the verdict names them.
constexpr double kOthersCores = 0.5;

/// The machine's contention, which no thread setting mends: the cgroup quota's throttling, or other
/// processes on this process's CPUs; empty when neither reached its mark.
std::string machine_contention(const PhaseStats& stats, const VerdictContext& ctx) {
  const std::string cores = std::to_string(ctx.threads.cores);
  const double run_s = ctx.run.total();
  if (ctx.cpu.throttled_s > 0 && run_s > 0 && ctx.cpu.throttled_s >= kThrottledShare * run_s) {
    return "the cgroup's CPU quota held the process back in " + std::to_string(ctx.cpu.throttled_periods) + " periods, " +
           cores_text(ctx.cpu.throttled_s) + " s in all (" + detail::format_percent(ctx.cpu.throttled_s / run_s, 0) +
           " of the run): the steps that met it stalled until the next period; keep the busy threads within the "
           "quota's " + cores + (ctx.threads.cores == 1 ? " core" : " cores") + " (ThreadOptions::intra_op auto counts them, LoaderOptions::workers adds to "
           "them) or raise the quota";
  }
  // other processes on this process's CPUs (the run's other ranks on this machine aside, counted as this one)
  const double others = ctx.cpu.others_cores - static_cast<double>(ctx.ranks_on_machine - 1) * ctx.cpu.process_cores;
  if (others >= kOthersCores) {
    const Distribution step = stats.step();
    std::string spread;
    if (step.p50_ms > 0 && step.p90_ms >= 2 * step.p50_ms) spread = "; the step's p90 is " + ratio(step.p90_ms / step.p50_ms) + " its p50";
    return "other processes kept " + cores_text(others) + " cores busy on the " + std::to_string(ctx.cpu.cores) +
           " this process may use (its own threads " + cores_text(ctx.cpu.process_cores) + "): the steps waited for the "
           "cores, so the step times and the bound above measure the machine's load as much as the training" + spread +
           "; run it again on a quiet machine, or on cores of its own (taskset, a cgroup)";
  }
  return {};
}

/// The process's own contention: its ranks, pools and threads against its cores.
std::string contention_of(const std::string& bound, const VerdictContext& ctx) {
  const ThreadSetting& s = ctx.threads.setting;
  const std::string cores = std::to_string(ctx.threads.cores);
  if (ctx.ranks_on_machine > 1 && ctx.threads.cores <= 1) {  // data parallelism within one machine's few cores
    const std::string machine = ctx.cpu.cores > 0 ? std::to_string(ctx.cpu.cores) + " cores" : "cores";
    return std::to_string(ctx.ranks_on_machine) + " ranks share this machine's " + machine +
           ", one core or less each: ranks on one machine gain only when one process cannot use its cores, and "
           "each adds its own gradient exchange; one process with its threads measured is likely as fast or faster";
  }
  if (s.intra_op > 1 && s.blas > 1) {
    return "each of the " + std::to_string(s.intra_op) + " intra-op threads calls a BLAS pool of " +
           std::to_string(s.blas) + " threads: up to " + std::to_string(s.intra_op * s.blas) + " busy threads on " +
           cores + " cores; set ThreadOptions::blas to 1";
  }
  if (s.intra_op > ctx.threads.cores || s.blas > ctx.threads.cores) {
    const bool intra = s.intra_op > ctx.threads.cores;
    return std::to_string(intra ? s.intra_op : s.blas) + (intra ? " intra-op" : " BLAS") + " threads on " + cores +
           " cores: they take turns on the cores and wait for each other; set " +
           (intra ? "ThreadOptions::intra_op to " : "ThreadOptions::blas to ") + cores +
           " or leave ThreadOptions::intra_op auto to measure";
  }
  if (ctx.cpu.pools.empty()) return {};
  const PoolCpu* blas = ctx.cpu.pool("blas");
  if (blas && s.blas == 1 && blas->cores >= 0.2) {
    return "the BLAS pool kept " + cores_text(blas->cores) + " cores busy although it is set to 1 thread: it spins "
           "outside the thread policy";
  }
  const PoolCpu* other = ctx.cpu.pool("other");
  if (other && other->cores >= 0.25) {
    return "threads outside fitscope's pools kept " + cores_text(other->cores) + " cores busy beside the training";
  }
  if (ctx.cpu.process_cores > static_cast<double>(ctx.threads.cores) + 0.1) {
    return "the process's threads kept " + cores_text(ctx.cpu.process_cores) + " cores busy on its share of " + cores +
           ": they queue for the cores; lower LoaderOptions::workers or ThreadOptions::intra_op";
  }
  const int64_t computing = std::max(s.intra_op, s.blas);
  if (bound == "compute" && computing < ctx.threads.cores && ctx.cpu.process_cores < static_cast<double>(ctx.threads.cores) - 0.5) {
    const std::string idle = "intra-op threads " + std::to_string(s.intra_op) + " of " + cores + " cores, " +
                             cores_text(ctx.cpu.process_cores) + " busy: ";
    const ThreadCandidate* wider = measured(ctx.threads, ThreadSetting{ctx.threads.cores, 1});
    const ThreadCandidate* chosen = measured(ctx.threads, s);
    if (ctx.threads.chosen_by == "auto" && wider && chosen) {
      return idle + "ThreadOptions::intra_op " + cores + " ran the warm-up steps " + ratio(wider->step_ms / chosen->step_ms) +
             " slower, so the idle core is left to the loader and callbacks";
    }
    return idle + "ThreadOptions::intra_op auto (the default) measures whether more threads are faster";
  }
  return {};
}

/// The largest part of the wall time outside the training steps, when it reaches 20 %.
std::string outside_steps(const VerdictContext& ctx) {
  const RunTime& r = ctx.run;
  const double wall = r.total();
  if (wall <= 0) return {};
  struct Part {
    const char* name;
    double seconds;
    std::string fix;
  };
  char split[32];
  std::snprintf(split, sizeof split, "%g", ctx.validation_split);
  const Part parts[] = {
      {"validation", r.validation,
       std::string("validate on fewer examples: a smaller FitOptions::validation_split (") + split +
           " now) or a smaller validation set"},
      {"epoch ends", r.epoch_end, "look at the epoch hooks and checkpoints in the callback table"},
      {"start-up", r.startup,
       "it holds loading the model and the data, the ranks' rendezvous and the first step's set-up; a longer run "
       "amortises it"},
      {"shutdown", r.shutdown, "look at on_train_end in the callback table and the files written at the end"},
  };
  const Part* largest = nullptr;
  for (const Part& p : parts) {
    if (!largest || p.seconds > largest->seconds) largest = &p;
  }
  if (largest->seconds < 0.2 * wall) return {};
  return std::string(largest->name) + " takes " + detail::format_percent(largest->seconds / wall, 0) + " of the run's wall time, the " +
         "training steps " + detail::format_percent(r.training_steps / wall, 0) + ": " + largest->fix;
}

}  // namespace

std::string verdict_headline(const Verdict& v, int64_t measured_steps) {
  if (v.level == "unjudged") return "too short to judge (" + std::to_string(measured_steps) + " measured steps)";
  return v.level + " " + v.bound + "-bound (" + detail::format_percent(v.share, 0) + ")";
}

Verdict judge(const PhaseStats& s, const VerdictContext& ctx) {
  Verdict v;
  const detail::BoundRule* named = nullptr;
  int named_level = 0;
  double named_share = 0;
  for (const detail::BoundRule& rule : detail::bound_rules()) {
    const double share = rule.share(s, ctx);
    const int level = share >= rule.high ? 2 : share >= rule.moderate ? 1 : 0;
    if (level > named_level || (level == named_level && level > 0 && share > named_share)) {
      named = &rule;
      named_level = level;
      named_share = share;
    }
  }
  if (named != nullptr) {
    v.level = named_level == 2 ? "highly" : "moderately";
  } else {
    named = &detail::compute_rule();
    named_share = named->share(s, ctx);
    v.level = s.measured_steps() == 0 ? "not" : named_share >= named->high ? "highly" : "moderately";
  }
  v.bound = named->bound;
  v.share = named_share;
  const bool gpu = ctx.device_idle_fraction >= 0;
  const bool against_p50 = v.bound == "launch" || (gpu && v.bound == "compute");  // the idle share is of the p50 step
  const double step_ms = against_p50 ? s.step().p50_ms : s.step().mean_ms - s.phase(Phase::data_wait).mean_ms;
  detail::AdviceText advice = named->advice(detail::format_percent(v.share, 0) + " of each step", v.share, step_ms, ctx);
  v.advice = std::move(advice.text);
  v.actions = std::move(advice.actions);
  if (s.measured_steps() < kMinJudgedSteps) {
    v.level = "unjudged";
    v.advice = (s.measured_steps() == 0 ? std::string("no step was measured after the warm-up")
                                         : "only " + std::to_string(s.measured_steps()) + " steps were measured after the warm-up") +
               " (at least " +
               std::to_string(kMinJudgedSteps) + " are needed to call a bound; the shares above are of those): run more "
               "steps (more epochs or steps per epoch) or fewer warm-up steps to judge it";
    v.actions.clear();
  }
  // the machine's first, then the process's own: both where both apply
  const std::string machine = machine_contention(s, ctx);
  const std::string own = contention_of(v.bound, ctx);
  v.contention = machine.empty() ? own : own.empty() ? machine : machine + "; besides, " + own;
  v.machine = machine;
  v.outside_steps = outside_steps(ctx);
  const StragglerCause* named_rank = v.bound == "straggler" ? detail::slowest_straggler(ctx) : nullptr;
  for (const StragglerCause& c : ctx.stragglers) {
    if (&c != named_rank) v.stragglers += (v.stragglers.empty() ? "" : "; ") + detail::straggle_text(c);
  }
  return v;
}

}  // namespace fitscope
