// The verdict's bounds, one row each (kBounds), with each row's share and advice, and compute, named
// when no row reaches its moderate mark (verdict_bounds.hpp); the straggler's kinds and texts, which
// judge reads too.

#include "verdict_bounds.hpp"

#include "fitscope/summary/detail/percent.hpp"
#include "thread_choice_text.hpp"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <string>
#include <vector>

namespace fitscope {
namespace detail {
namespace {

/// "set by ThreadOptions::intra_op" or what the warm-up measured for the chosen setting against one thread.
std::string how_chosen(const ThreadChoice& t) {
  if (t.chosen_by != "auto") return "set by ThreadOptions::intra_op";
  if (t.search_needs_steps > 0) return "the default: the run was too short to measure others";
  const std::string reason = detail::kept_reason(t), rechecks = detail::rechecks_text(t);
  const std::string warmup = reason.empty() ? "chosen by measuring " + std::to_string(t.candidates.size()) + " settings in warm-up"
                                            : "measured in warm-up, " + reason;
  return rechecks.empty() ? warmup : warmup + "; " + rechecks;
}

std::string percent(double share) { return detail::format_percent(share, 0); }

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
}  // namespace detail

std::optional<double> math_gflops(const VerdictContext& ctx) {
  const double flops = ctx.layers.step_flops();
  // on a GPU the host's forward and backward only enqueue the work: the probed steps' own, as the device ran them
  const LayerTimes& l = ctx.layers;
  const double ms = l.device_clock ? l.per_step_ms(l.forward_phase_ns + l.backward_phase_ns) : ctx.forward_backward_ms;
  if (!ctx.peak || ctx.peak->gemm_gflops <= 0 || flops <= 0 || ms <= 0) return std::nullopt;
  return flops * 1e-9 / (ms * 1e-3);
}

std::string math_rate_text(const VerdictContext& ctx) {
  const LayerTimes& l = ctx.layers;
  const std::optional<double> gflops = math_gflops(ctx);
  if (!gflops) return {};
  const double flops = l.step_flops(), rate = *gflops, of_peak = rate / ctx.peak->gemm_gflops;
  char text[400];
  std::snprintf(text, sizeof text,
                "the layers' matrix products and convolutions (%.3g GFLOP a step) run at %.1f GFLOP/s in forward and "
                "backward: %s of this machine's measured %.1f GFLOP/s (a matrix product on %s)",
                flops * 1e-9, rate, detail::percent(of_peak).c_str(), ctx.peak->gemm_gflops, ctx.peak->ran_on().c_str());
  std::string out = text;
  if (of_peak >= 0.5) return out + ": arithmetic bounds it";
  out += ", so the time between and around the arithmetic bounds it more than the arithmetic does";
  const std::vector<const LayerTime*> top = l.by_time();
  const double phases = static_cast<double>(l.forward_phase_ns + l.backward_phase_ns);
  if (!top.empty() && phases > 0) {
    const LayerTime& t = *top.front();
    out += "; the most time: " + t.name + ", " + detail::percent(static_cast<double>(t.forward_ns + t.backward_ns) / phases) +
           " of forward and backward" + (t.forward_flops + t.backward_flops > 0 ? "" : ", with no matrix math");
  }
  return out;
}

namespace detail {
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

}  // namespace

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

const StragglerCause* slowest_straggler(const VerdictContext& ctx) {
  const StragglerCause* slowest = nullptr;
  for (const StragglerCause& c : ctx.stragglers) {
    if (c.chronic && (!slowest || c.busy_ms - c.peers_busy_ms > slowest->busy_ms - slowest->peers_busy_ms)) slowest = &c;
  }
  return slowest;
}

namespace {

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

/// The share of the step that memory bandwidth bounds (LayerTimes::bandwidth_bound): the bound parts'
/// share of the probed steps' forward and backward, times forward and backward's share of the step (on a
/// GPU, the device's busy share). Their bytes are the least they move, so the share is the least it is.
double memory_share(const PhaseStats& s, const VerdictContext& c) {
  if (!c.peak) return 0.0;
  const double phases = c.device_idle_fraction >= 0 ? 1 - c.device_idle_fraction : s.share(Phase::forward) + s.share(Phase::backward);
  return c.layers.bandwidth_bound_share(*c.peak) * phases;
}

AdviceText memory_advice(const std::string& of_step, double, double, const VerdictContext& ctx) {
  const std::vector<const LayerTime*> bound = ctx.layers.bandwidth_bound(*ctx.peak);
  std::string names;
  LayerTimes::BandwidthBound all;
  for (std::size_t i = 0; i < bound.size(); ++i) {
    if (i < 3) names += (i == 0 ? "" : ", ") + bound[i]->name;
    const LayerTimes::BandwidthBound part = LayerTimes::bandwidth_bound(*bound[i], *ctx.peak);
    all.ns += part.ns;
    all.bytes += part.bytes;
  }
  if (bound.size() > 3) names += " and " + std::to_string(bound.size() - 3) + " more";
  const double gbps = LayerTime::per_ns(all.bytes, all.ns);
  char text[600];
  std::snprintf(text, sizeof text,
                "operations that move more bytes than they compute take %s: %s read and write at least %.1f GB/s, %s of "
                "this machine's measured %.1f GB/s copy (on %s): memory bandwidth bounds them, not arithmetic, so fewer "
                "bytes is what helps",
                of_step.c_str(), names.c_str(), gbps, percent(gbps / ctx.peak->memory_gbps).c_str(), ctx.peak->memory_gbps,
                ctx.peak->ran_on().c_str());
  if (ctx.precision == "bf16") {
    return {std::string(text) + ": element-wise operations fused or made in place (one pass over the data instead of several), "
                                "or a device with more memory bandwidth",
            {}};
  }
  return {std::string(text) + ": bfloat16 (TrainerOptions::precision bf16) halves them, and element-wise operations fused "
                              "or made in place pass over the data once instead of several times",
          {{"TrainerOptions::precision", ctx.precision, "bf16", "half the bytes the bandwidth-bound operations read and write"}}};
}

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
    {"memory", memory_share, 0.30, 0.50, memory_advice},
};

const BoundRule kCompute = {"compute",
                            [](const PhaseStats& s, const VerdictContext& c) {
                              if (c.device_idle_fraction >= 0) return 1 - c.device_idle_fraction;
                              double share = 0;
                              for (Phase p : kComputePhases) share += s.share(p);
                              return share;
                            },
                            0.0, 0.80, compute_advice};

}  // namespace

const std::vector<BoundRule>& bound_rules() {
  static const std::vector<BoundRule> rules(std::begin(kBounds), std::end(kBounds));
  return rules;
}

const BoundRule& compute_rule() { return kCompute; }

}  // namespace detail
}  // namespace fitscope
