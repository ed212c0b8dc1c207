#include "fitscope/summary/verdict.hpp"

#include "fitscope/summary/detail/percent.hpp"
#include "thread_choice_text.hpp"

#include <algorithm>
#include <cstdio>
#include <iterator>
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

/// "set by ThreadOptions::intra_op" or what the warm-up measured for the chosen setting against one thread.
std::string how_chosen(const ThreadChoice& t) {
  if (t.chosen_by != "auto") return "set by ThreadOptions::intra_op";
  if (t.search_needs_steps > 0) return "the default: the run was too short to measure others";
  const std::string reason = detail::kept_reason(t), rechecks = detail::rechecks_text(t);
  const std::string warmup = reason.empty() ? "chosen by measuring " + std::to_string(t.candidates.size()) + " settings in warm-up"
                                            : "measured in warm-up, " + reason;
  return rechecks.empty() ? warmup : warmup + "; " + rechecks;
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

std::string percent(double share) { return detail::format_percent(share, 0); }

/// The advice of a bound: its sentence, naming the settings by their C++ options, and its actions.
struct AdviceText {
  std::string text;
  std::vector<Advice> actions;
};

/// What to change when the step waits for data. With workers auto, the tuner already tried more
/// workers: the advice says what the loader needs per batch and what would reduce it.
AdviceText input_advice(const std::string& of_step, double step_ms, const VerdictContext& ctx) {
  const LoaderStats& l = ctx.loader;
  if (!l.auto_workers) {
    const std::string from = std::to_string(l.workers), to = std::to_string(l.workers < 1 ? 2 : l.workers * 2);
    return {"waiting for data takes " + of_step + ": raise LoaderOptions::workers from " + from + " to " + to +
                " (with LoaderOptions::prefetch at least as large), or let LoaderOptions::workers auto choose",
            {{"LoaderOptions::workers", from, to, "batches built beside the step instead of in its place"}}};
  }
  if (l.workers == 0) {  // auto found a batch cheaper to build than to hand over: the wait is the build itself
    const std::string batch = std::to_string(ctx.batch_size);
    return {"waiting for data takes " + of_step + ": the batches are built on the training thread (" +
                training_thread_reason(l) + "), so the wait is the build itself, a gather of the batch's examples " +
                "out of memory; a worker takes it over once a batch costs more to build than to hand over, " +
                "which a larger LoaderOptions::batch_size (" + batch + " now) brings about",
            {{"LoaderOptions::batch_size", batch, std::to_string(ctx.batch_size * 2),
              "a worker builds the batches beside the step once a batch costs more to build than to hand over"}}};
  }
  char text[400];
  std::snprintf(text, sizeof text,
                "waiting for data takes %s although LoaderOptions::workers auto settled on %lld: a worker needs "
                "%.2f ms per batch (%.2f ms of CPU) and the step %.2f ms beside its wait",
                of_step.c_str(), static_cast<long long>(l.workers), l.batch_build_ms, l.batch_build_cpu_ms, step_ms);
  const std::string out = text;
  const int64_t cores = std::max<int64_t>(1, ctx.threads.cores);
  if (l.batch_build_ms > 0 && l.batch_build_cpu_ms >= 0.5 * l.batch_build_ms) {
    std::snprintf(text, sizeof text, "; keeping up takes %.1f cores of %s beside the step, on %lld cores: ",
                  step_ms > 0 ? l.batch_build_cpu_ms / step_ms : 0.0, ctx.decodes_images ? "decoding" : "batch building",
                  static_cast<long long>(cores));
    if (ctx.decodes_images) {
      return {out + text + "decode fewer pixels (a smaller ImageFolderOptions::height and width), cache the decoded " +
                  "examples (LoaderOptions::cache), or add cores",
              {{"LoaderOptions::cache", "false", "true", "each image decoded once instead of once an epoch"}}};
    }
    return {out + text + "fewer or cheaper augmentation transforms (LoaderOptions::transforms), caching the examples " +
                "(LoaderOptions::cache), or more cores",
            {}};
  }
  return {out + "; the builds mostly wait rather than compute (LoaderOptions::delay_ms, slow storage): a faster " +
              "source or caching the examples (LoaderOptions::cache)",
          {{"LoaderOptions::cache", "false", "true", "each example read once instead of once an epoch"}}};
}

AdviceText callbacks_advice(const std::string& of_step, double, double, const VerdictContext& ctx) {
  const std::string most = ctx.slowest_callback.empty() ? "" : " (most in " + ctx.slowest_callback + ")";
  if (ctx.callback_mode == "async") {
    return {"callbacks take " + of_step + most +
                " although they run off the training thread (Callback::set_async(true)): they are slower than "
                "the step and their queue fills; make them act every 50 batches instead of every batch",
            {}};
  }
  return {"callbacks take " + of_step + most + ": run them off the training thread (Callback::set_async(true)) " +
              "or log every 50 batches instead of every batch",
          {{"Callback::async", "sync", "async", "the callbacks' time off the training thread"}}};
}

AdviceText checkpoint_advice(const std::string& of_step, double, double, const VerdictContext&) {
  return {"checkpointing takes " + of_step +
              ": checkpoint less often (RunOptions::backup_every_batches, or ModelCheckpoint's save_freq)",
          {}};
}

AdviceText communication_advice(const std::string& of_step, double, double, const VerdictContext& ctx) {
  const std::string batch = std::to_string(ctx.batch_size);
  return {"gradient communication takes " + of_step + ": raise LoaderOptions::batch_size from " + batch +
              " to do more work per all-reduce",
          {{"LoaderOptions::batch_size", batch, std::to_string(ctx.batch_size * 2), "half the all-reduces for the same examples"}}};
}

AdviceText overhead_advice(const std::string& of_step, double, double, const VerdictContext& ctx) {
  const std::string batch = std::to_string(ctx.batch_size);
  return {"unclaimed per-step overhead takes " + of_step + ": raise LoaderOptions::batch_size from " + batch +
              " (a sweep shows where throughput levels off)",
          {{"LoaderOptions::batch_size", batch, std::to_string(ctx.batch_size * 2), "the per-step overhead paid for twice the examples"}}};
}

AdviceText launch_advice(const std::string&, double share, double step_ms, const VerdictContext& ctx) {
  // the host's launches cost about the same per step whatever the batch: the GPU's work grows with it
  // until it fills the step
  const double gain = ctx.device_busy_ms > 0 ? step_ms / ctx.device_busy_ms : 1.0;
  const std::string batch = std::to_string(ctx.batch_size);
  char text[640];
  std::snprintf(text, sizeof text,
                "the GPU idles %s of each step waiting for the host to launch its work (its own work %.3f ms of "
                "a %.3f ms step): the step is launch-bound. Raise LoaderOptions::batch_size from %s: the "
                "launches cost the same per step, so up to %.1fx the examples per second before the GPU is "
                "busy; or replay the step as one CUDA graph (one launch instead of one per kernel; "
                "TrainerOptions::cuda_graph on, or auto once its trial finds the replay faster), up to %.1fx",
                percent(share).c_str(), ctx.device_busy_ms, step_ms, batch.c_str(), gain, gain);
  char expected[96];
  std::snprintf(expected, sizeof expected, "up to %.1fx the examples per second (the GPU idle %s of the step)", gain,
                percent(share).c_str());
  int64_t to = ctx.batch_size * 2;
  while (to < ctx.batch_size * gain && to < ctx.batch_size * 64) to *= 2;
  return {text, {{"LoaderOptions::batch_size", batch, std::to_string(to), expected}}};
}

}  // namespace

std::optional<double> math_gflops(const VerdictContext& ctx) {
  const double flops = ctx.layers.step_flops();
  if (!ctx.peak || ctx.peak->gemm_gflops <= 0 || flops <= 0 || ctx.forward_backward_ms <= 0) return std::nullopt;
  return flops * 1e-9 / (ctx.forward_backward_ms * 1e-3);
}

std::string math_rate_text(const VerdictContext& ctx) {
  const LayerTimes& l = ctx.layers;
  const std::optional<double> gflops = math_gflops(ctx);
  if (!gflops) return {};
  const double flops = l.step_flops(), rate = *gflops, of_peak = rate / ctx.peak->gemm_gflops;
  char text[400];
  std::snprintf(text, sizeof text,
                "the layers' matrix products and convolutions (%.3g GFLOP a step) run at %.1f GFLOP/s in forward and "
                "backward: %s of this machine's measured %.1f GFLOP/s (a matrix product on %lld %s)",
                flops * 1e-9, rate, percent(of_peak).c_str(), ctx.peak->gemm_gflops, static_cast<long long>(ctx.peak->cores),
                ctx.peak->cores == 1 ? "core" : "cores");
  std::string out = text;
  if (of_peak >= 0.5) return out + ": arithmetic bounds it";
  out += ", so the time between and around the arithmetic bounds it more than the arithmetic does";
  const std::vector<const LayerTime*> top = l.by_time();
  const double phases = static_cast<double>(l.forward_phase_ns + l.backward_phase_ns);
  if (!top.empty() && phases > 0) {
    const LayerTime& t = *top.front();
    out += "; the most time: " + t.name + ", " + percent(static_cast<double>(t.forward_ns + t.backward_ns) / phases) +
           " of forward and backward" + (t.forward_flops + t.backward_flops > 0 ? "" : ", with no matrix math");
  }
  return out;
}

namespace {

AdviceText compute_advice(const std::string& of_step, double share, double step_ms, const VerdictContext& ctx) {
  if (ctx.device_idle_fraction >= 0) {
    char text[400];
    std::snprintf(text, sizeof text,
                  "the GPU's own work takes %s of each step (%.3f ms of a %.3f ms step): its math bounds the run, and "
                  "what the host does beside it is hidden behind it; bfloat16 (TrainerOptions::precision bf16), a "
                  "smaller model or a faster GPU is what helps",
                  percent(share).c_str(), ctx.device_busy_ms, step_ms);
    return {text, {}};
  }
  const ThreadSetting& s = ctx.threads.setting;
  const int64_t computing = std::max(s.intra_op, s.blas);
  std::string out = "compute takes " + of_step + ": the model's own math bounds the run; intra-op " +
                    std::to_string(s.intra_op) + ", BLAS " + std::to_string(s.blas) + " on " +
                    std::to_string(ctx.threads.cores) + " cores (" + how_chosen(ctx.threads) + ")";
  const std::string math = math_rate_text(ctx);
  if (!math.empty()) out += "; " + math;
  if (computing < ctx.threads.cores) return {out + "; see the contention line for the idle cores", {}};
  if (const auto gflops = math_gflops(ctx); gflops && *gflops < 0.5 * ctx.peak->gemm_gflops) {
    return {out + ": a larger LoaderOptions::batch_size (more work in each operation) or fewer, larger operations is what "
                  "helps, more than a faster device",
            {}};
  }
  return {out + ": every core computes, so a smaller model, a larger LoaderOptions::batch_size or a faster device is "
                "what helps",
          {}};
}

/// On a GPU whose idle share was measured, the host's time in a phase costs the step only while the
/// device idles: a data wait beside a busy GPU is hidden behind its work. So a host phase's share
/// counts up to the device's idle share.
double host(double share, const VerdictContext& ctx) {
  return ctx.device_idle_fraction >= 0 ? std::min(share, ctx.device_idle_fraction) : share;
}

/// What makes a rank slow, by the phase its own work exceeds the other ranks' in, and what to change.
struct StraggleKind {
  std::vector<Phase> phases;
  const char* fix;
};

/// The phases of the model's own work: compute.
const std::vector<Phase> kComputePhases = {Phase::forward, Phase::backward, Phase::optimizer, Phase::graph, Phase::metrics};

const StraggleKind kStraggleKinds[] = {
    {{Phase::data_wait}, "its input is slower than theirs (a slower disk, fewer free cores for its workers, or larger records in its "
     "shards): give its loader more LoaderOptions::workers or balance the shards"},
    {{Phase::h2d}, "its copies to the device are slower: pin the batches (LoaderOptions::pin_memory) or look at its device's link"},
    {kComputePhases, "the same math takes it longer: a slower or busier machine (other processes or a CPU quota on its host, "
     "fewer cores, a hotter or slower GPU); give it a machine like the others' or look at its host's load"},
    {{Phase::callbacks}, "callbacks that run on it alone (the chief's logging, its checkpoints): run them off the training thread "
     "(Callback::set_async(true)) or less often"},
    {{Phase::checkpoint}, "it writes checkpoints the others do not: checkpoint less often (RunOptions::backup_every_batches)"},
    {{Phase::other}, "time outside the timed phases: look at its host's load against the others'"},
};

const StraggleKind& straggle_kind(Phase p) {
  for (const StraggleKind& k : kStraggleKinds) {
    if (std::find(k.phases.begin(), k.phases.end(), p) != k.phases.end()) return k;
  }
  return kStraggleKinds[std::size(kStraggleKinds) - 1];
}

/// "rank 1 straggles in most steps: its backward takes 12.10 ms a step (mean) against 2.05 ms on the
/// other ranks, its own work (the step less comm) 14.20 ms at p50 against 4.10 ms", or now and then.
std::string straggle_text(const StragglerCause& c) {
  char text[400];
  if (c.chronic) {
    std::snprintf(text, sizeof text,
                  "rank %lld straggles in most steps: its %s takes %.2f ms a step (mean) against %.2f ms on the other "
                  "ranks, its own work (the step less comm) %.2f ms at p50 against %.2f ms",
                  static_cast<long long>(c.rank), std::string(phase_name(c.phase)).c_str(), c.phase_ms, c.peers_phase_ms,
                  c.busy_ms, c.peers_busy_ms);
  } else {
    std::snprintf(text, sizeof text,
                  "rank %lld straggles now and then: its %s's p99 is %.2f ms against %.2f ms on the other ranks, its own "
                  "work's p99 %.2f ms against %.2f ms (the p50s alike)",
                  static_cast<long long>(c.rank), std::string(phase_name(c.phase)).c_str(), c.phase_ms, c.peers_phase_ms,
                  c.busy_ms, c.peers_busy_ms);
  }
  return text;
}

/// The chronic straggler the others wait for longest; null when no rank straggles in most steps.
const StragglerCause* slowest_straggler(const VerdictContext& ctx) {
  const StragglerCause* slowest = nullptr;
  for (const StragglerCause& c : ctx.stragglers) {
    if (c.chronic && (!slowest || c.busy_ms - c.peers_busy_ms > slowest->busy_ms - slowest->peers_busy_ms)) slowest = &c;
  }
  return slowest;
}

/// The others' wait for the slowest chronic straggler, as a share of the judged rank's mean step.
double straggler_share(const PhaseStats& s, const VerdictContext& ctx) {
  const StragglerCause* slowest = slowest_straggler(ctx);
  const double step = s.step().mean_ms;
  return host(slowest && step > 0 ? std::clamp((slowest->busy_ms - slowest->peers_busy_ms) / step, 0.0, 1.0) : 0.0, ctx);
}

/// `comm`'s share less the others' wait for a chronic straggler, when the judged rank is one of the others.
double communication_share(const PhaseStats& s, const VerdictContext& ctx) {
  const StragglerCause* slowest = slowest_straggler(ctx);
  const double comm = s.share(Phase::comm);
  return host(slowest && slowest->rank != ctx.judged_rank ? std::max(0.0, comm - straggler_share(s, ctx)) : comm, ctx);
}

AdviceText straggler_advice(const std::string& of_step, double, double, const VerdictContext& ctx) {
  const StragglerCause* slowest = slowest_straggler(ctx);
  if (!slowest) return {"", {}};
  return {"the other ranks wait for rank " + std::to_string(slowest->rank) + " " + of_step + " (in comm): " + straggle_text(*slowest) + "; " +
              straggle_kind(slowest->phase).fix,
          {}};
}

/// A bound the verdict can name: its share of the step, the shares at which it is "moderately" and
/// "highly" the bound, and its advice. The verdict names the bound of kBounds of the highest level (the
/// larger share among equals), and kCompute when none reaches its moderate mark: "highly" from its high
/// mark, else "moderately".
struct BoundRule {
  const char* bound;
  double (*share)(const PhaseStats&, const VerdictContext&);
  double moderate, high;
  AdviceText (*advice)(const std::string& of_step, double share, double step_ms, const VerdictContext&);
};

const BoundRule kBounds[] = {
    {"input", [](const PhaseStats& s, const VerdictContext& c) { return host(s.share(Phase::data_wait) + s.share(Phase::h2d), c); },
     0.05, 0.20, [](const std::string& of_step, double, double step_ms, const VerdictContext& c) { return input_advice(of_step, step_ms, c); }},
    {"callbacks", [](const PhaseStats& s, const VerdictContext& c) { return host(s.share(Phase::callbacks), c); }, 0.05, 0.20,
     callbacks_advice},
    {"checkpoint", [](const PhaseStats& s, const VerdictContext& c) { return host(s.share(Phase::checkpoint), c); }, 0.05, 0.20,
     checkpoint_advice},
    {"straggler", straggler_share, 0.03, 0.15, straggler_advice},
    {"communication", communication_share, 0.03, 0.15, communication_advice},
    {"overhead", [](const PhaseStats& s, const VerdictContext& c) { return host(s.share(Phase::other), c); }, 0.03, 0.15,
     overhead_advice},
    // the device's idle share that the host-only phases leave: waiting for the host's launches
    {"launch",
     [](const PhaseStats& s, const VerdictContext& c) {
       if (c.device_idle_fraction < 0) return 0.0;
       const double host_only = s.share(Phase::data_wait) + s.share(Phase::callbacks) + s.share(Phase::checkpoint) + s.share(Phase::other);
       return std::max(0.0, c.device_idle_fraction - host_only);
     },
     0.30, 0.50, launch_advice},
};

const BoundRule kCompute = {"compute",
                            [](const PhaseStats& s, const VerdictContext& c) {
                              if (c.device_idle_fraction >= 0) return 1 - c.device_idle_fraction;
                              double share = 0;
                              for (Phase p : kComputePhases) share += s.share(p);
                              return share;
                            },
                            0.0, 0.80, compute_advice};

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
  return std::string(largest->name) + " takes " + percent(largest->seconds / wall) + " of the run's wall time, the " +
         "training steps " + percent(r.training_steps / wall) + ": " + largest->fix;
}

}  // namespace

std::string verdict_headline(const Verdict& v, int64_t measured_steps) {
  if (v.level == "unjudged") return "too short to judge (" + std::to_string(measured_steps) + " measured steps)";
  return v.level + " " + v.bound + "-bound (" + detail::format_percent(v.share, 0) + ")";
}

Verdict judge(const PhaseStats& s, const VerdictContext& ctx) {
  Verdict v;
  const BoundRule* named = nullptr;
  int named_level = 0;
  double named_share = 0;
  for (const BoundRule& rule : kBounds) {
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
    named = &kCompute;
    named_share = named->share(s, ctx);
    v.level = s.measured_steps() == 0 ? "not" : named_share >= named->high ? "highly" : "moderately";
  }
  v.bound = named->bound;
  v.share = named_share;
  const bool gpu = ctx.device_idle_fraction >= 0;
  const bool against_p50 = v.bound == "launch" || (gpu && v.bound == "compute");  // the idle share is of the p50 step
  const double step_ms = against_p50 ? s.step().p50_ms : s.step().mean_ms - s.phase(Phase::data_wait).mean_ms;
  AdviceText advice = named->advice(percent(v.share) + " of each step", v.share, step_ms, ctx);
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
  const StragglerCause* named_rank = v.bound == "straggler" ? slowest_straggler(ctx) : nullptr;
  for (const StragglerCause& c : ctx.stragglers) {
    if (&c != named_rank) v.stragglers += (v.stragglers.empty() ? "" : "; ") + straggle_text(c);
  }
  return v;
}

}  // namespace fitscope
