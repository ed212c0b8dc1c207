#include "fitscope/timing/verdict.hpp"

#include <vector>

namespace fitscope {
namespace {

struct Candidate {
  std::string bound;
  double share;
  double moderate;
  double high;
};

int severity(const Candidate& c) { return c.share >= c.high ? 2 : c.share >= c.moderate ? 1 : 0; }

std::string percent(double share) { return std::to_string(static_cast<int>(share * 100 + 0.5)) + "%"; }

std::string advice_for(const std::string& bound, double share, const VerdictContext& ctx) {
  const std::string of_step = percent(share) + " of each step";
  if (bound == "input") {
    const int64_t next = ctx.workers < 1 ? 2 : ctx.workers * 2;
    return "waiting for data takes " + of_step + ": raise --workers from " +
           std::to_string(ctx.workers) + " to " + std::to_string(next) +
           " (with --prefetch at least as large, 8 by default)";
  }
  if (bound == "callbacks") {
    const std::string most = ctx.slowest_callback.empty() ? "" : " (most in " + ctx.slowest_callback + ")";
    if (ctx.callback_mode == "async") {
      return "callbacks take " + of_step + most +
             " although --callback-mode is async: they are slower than the step and their queue fills; "
             "make them act every 50 batches instead of every batch";
    }
    return "callbacks take " + of_step + most + ": run them off the training thread (--callback-mode " +
           ctx.callback_mode + " -> async) or log every 50 batches instead of every batch";
  }
  if (bound == "checkpoint") {
    return "checkpointing takes " + of_step + ": checkpoint less often (--checkpoint-every)";
  }
  if (bound == "communication") {
    return "gradient communication takes " + of_step +
           ": raise --batch-size from " + std::to_string(ctx.batch_size) +
           " to do more work per all-reduce";
  }
  if (bound == "overhead") {
    return "unclaimed per-step overhead takes " + of_step + ": raise --batch-size from " +
           std::to_string(ctx.batch_size) + " (fitscope sweep shows where throughput levels off)";
  }
  return "compute takes " + of_step + ": the model's own math bounds the run; --threads is " +
         std::to_string(ctx.threads) + ", a faster device or a smaller model is what helps";
}

}  // namespace

Verdict judge(const PhaseStats& s, const VerdictContext& ctx) {
  Verdict v;
  const std::vector<Candidate> candidates = {
      {"input", s.share(Phase::data_wait) + s.share(Phase::h2d), 0.05, 0.20},
      {"callbacks", s.share(Phase::callbacks), 0.05, 0.20},
      {"checkpoint", s.share(Phase::checkpoint), 0.05, 0.20},
      {"communication", s.share(Phase::comm), 0.03, 0.15},
      {"overhead", s.share(Phase::other), 0.03, 0.15},
  };
  const Candidate* worst = nullptr;
  for (const auto& c : candidates) {
    if (severity(c) == 0) continue;
    if (!worst || severity(c) > severity(*worst) ||
        (severity(c) == severity(*worst) && c.share > worst->share)) {
      worst = &c;
    }
  }
  if (worst) {
    v.bound = worst->bound;
    v.level = severity(*worst) == 2 ? "highly" : "moderately";
    v.share = worst->share;
  } else {
    v.bound = "compute";
    v.share = s.share(Phase::forward) + s.share(Phase::backward) + s.share(Phase::optimizer) +
              s.share(Phase::metrics);
    v.level = s.measured_steps() == 0 ? "not" : v.share >= 0.8 ? "highly" : "moderately";
  }
  v.advice = advice_for(v.bound, v.share, ctx);
  return v;
}

}  // namespace fitscope
