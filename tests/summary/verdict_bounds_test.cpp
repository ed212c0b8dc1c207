// The verdict's bounds one by one (src/summary/verdict_bounds.cpp, one row each): steps whose one large
// share is a bound's are named by it, "highly" past its high mark and "moderately" between its marks,
// with advice; compute is named when no row reaches its moderate mark. Every row of the table has its
// case here: a row added without one fails.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <utility>

#include "fitscope/summary/verdict.hpp"
#include "summary/verdict_bounds.hpp"

using namespace fitscope;

namespace verdict_bounds_test {

constexpr int64_t kStepNs = 10'000'000;

/// 20 identical 10 ms steps: `phase` takes `share` of each, forward the rest.
PhaseStats steps(Phase phase, double share) {
  StepRecord r;
  const auto ns = static_cast<int64_t>(std::llround(share * kStepNs));
  r.phase_ns[static_cast<std::size_t>(phase)] = ns;
  r.phase_ns[static_cast<std::size_t>(Phase::forward)] += kStepNs - ns;
  r.step_ns = kStepNs;
  PhaseStats stats(0);
  for (int i = 0; i < 20; ++i) stats.add(r);
  return stats;
}

/// The steps and context in which a bound's share is `share`.
using Case = std::function<std::pair<PhaseStats, VerdictContext>(double share)>;

Case of_phase(Phase p) {
  return [p](double share) { return std::make_pair(steps(p, share), VerdictContext{}); };
}

const std::map<std::string, Case>& cases() {
  static const std::map<std::string, Case> all = {
      {"input", of_phase(Phase::data_wait)},
      {"callbacks", of_phase(Phase::callbacks)},
      {"checkpoint", of_phase(Phase::checkpoint)},
      {"communication", of_phase(Phase::comm)},
      {"overhead", of_phase(Phase::other)},
      // the chief waits in comm for rank 1, whose own work is longer by that much
      {"straggler",
       [](double share) {
         VerdictContext ctx;
         StragglerCause c;
         c.rank = 1;
         c.phase = Phase::backward;
         c.busy_ms = 5 + share * kStepNs * 1e-6;
         c.peers_busy_ms = 5;
         ctx.stragglers = {c};
         return std::make_pair(steps(Phase::comm, share), ctx);
       }},
      // a GPU that idles for the host's launches
      {"launch",
       [](double share) {
         VerdictContext ctx;
         ctx.batch_size = 32;
         ctx.device_idle_fraction = share;
         ctx.device_busy_ms = (1 - share) * kStepNs * 1e-6;
         return std::make_pair(steps(Phase::backward, 0.5), ctx);
       }},
      // forward and backward the whole step; one layer's forward and backward move their bytes at 80 %
      // of the measured copy rate (their arithmetic none), the other's math runs at 50 % of the matrix
      // product's peak
      {"memory",
       [](double share) {
         VerdictContext ctx;
         ctx.peak = MachinePeak{300, 20, 2, "k", false};
         ctx.layers.probed_steps = 1;
         ctx.layers.forward_phase_ns = kStepNs / 2;
         ctx.layers.backward_phase_ns = kStepNs / 2;
         const auto ns = static_cast<int64_t>(std::llround(share * kStepNs));
         const int64_t forward = ns / 2, backward = ns - forward;
         ctx.layers.layers = {{"(model) relu", forward, backward, 0, 0, 16.0 * static_cast<double>(forward), 16.0 * static_cast<double>(backward)},
                              {"dense", kStepNs - ns, 0, 150.0 * static_cast<double>(kStepNs - ns), 0, 1e3, 0}};
         return std::make_pair(steps(Phase::backward, 0.5), ctx);
       }},
  };
  return all;
}

}  // namespace verdict_bounds_test

using namespace verdict_bounds_test;

TEST(VerdictBounds, EachBoundIsNamedHighlyPastItsHighMarkAndModeratelyBetweenItsMarks) {
  ASSERT_FALSE(fitscope::detail::bound_rules().empty());
  for (const fitscope::detail::BoundRule& rule : fitscope::detail::bound_rules()) {
    SCOPED_TRACE(rule.bound);
    const auto c = cases().find(rule.bound);
    ASSERT_NE(c, cases().end()) << "the bound " << rule.bound << " has no case in verdict_bounds_test.cpp";
    ASSERT_LT(rule.moderate, rule.high);
    const double high = std::min(1.0, rule.high + 0.05);
    const auto [high_steps, high_ctx] = c->second(high);
    const Verdict h = judge(high_steps, high_ctx);
    EXPECT_EQ(h.bound, rule.bound);
    EXPECT_EQ(h.level, "highly");
    EXPECT_NEAR(h.share, high, 1e-6);
    EXPECT_FALSE(h.advice.empty());
    const double between = (rule.moderate + rule.high) / 2;
    const auto [moderate_steps, moderate_ctx] = c->second(between);
    const Verdict m = judge(moderate_steps, moderate_ctx);
    EXPECT_EQ(m.bound, rule.bound);
    EXPECT_EQ(m.level, "moderately");
    EXPECT_NEAR(m.share, between, 1e-6);
    // below its moderate mark the bound is not named
    const auto [low_steps, low_ctx] = c->second(rule.moderate * 0.5);
    EXPECT_NE(judge(low_steps, low_ctx).bound, rule.bound);
  }
  for (const auto& entry : cases()) {
    const std::string& bound = entry.first;
    const bool in_table = std::any_of(fitscope::detail::bound_rules().begin(), fitscope::detail::bound_rules().end(),
                                      [&bound](const fitscope::detail::BoundRule& r) { return bound == r.bound; });
    EXPECT_TRUE(in_table) << "a case for " << bound << ", which the table does not hold";
  }
}

/// The memory row's layers, named with their rate against the copy's; bfloat16 is advised once. A
/// layer's forward and backward are judged each on its own.
TEST(VerdictBounds, AMemoryBoundStepNamesItsLayersAndTheirBandwidthAgainstTheMeasuredCopy) {
  auto [stats, ctx] = cases().at("memory")(0.6);
  Verdict v = judge(stats, ctx);
  ASSERT_EQ(v.bound, "memory");
  EXPECT_NE(v.advice.find("(model) relu read and write at least 16.0 GB/s, 80% of this machine's measured 20.0 GB/s copy (on 2 cores)"),
            std::string::npos) << v.advice;
  ASSERT_EQ(v.actions.size(), 1u);
  EXPECT_EQ(v.actions[0], (Advice{"TrainerOptions::precision", "32", "bf16", "half the bytes the bandwidth-bound operations read and write"}));
  ctx.precision = "bf16";
  v = judge(stats, ctx);
  EXPECT_TRUE(v.actions.empty());
  EXPECT_EQ(v.advice.find("TrainerOptions::precision"), std::string::npos) << v.advice;
  LayerTime& relu = ctx.layers.layers[0];
  EXPECT_NEAR(ctx.layers.bandwidth_bound_share(*ctx.peak), 0.6, 1e-9);
  const double forward_bytes = relu.forward_bytes;
  relu.forward_bytes *= 0.5 / 0.8 * 0.99;  // its forward below half the copy's rate: its backward alone
  EXPECT_NEAR(ctx.layers.bandwidth_bound_share(*ctx.peak), 0.3, 1e-9);
  relu.backward_bytes *= 0.5 / 0.8 * 0.99;  // neither
  EXPECT_EQ(ctx.layers.bandwidth_bound_share(*ctx.peak), 0);
  EXPECT_EQ(judge(stats, ctx).bound, "compute");
  relu.forward_bytes = forward_bytes;  // at 80 % of the copy's rate, but its math at 90 % of the peak's
  relu.forward_flops = 0.9 * 300 * static_cast<double>(relu.forward_ns);
  EXPECT_EQ(ctx.layers.bandwidth_bound_share(*ctx.peak), 0);
  relu.forward_flops = 0;
  EXPECT_NEAR(ctx.layers.bandwidth_bound_share(*ctx.peak), 0.3, 1e-9);
  ctx.peak->memory_gbps = 0;  // no measured copy rate: nothing to set the bytes against
  EXPECT_EQ(ctx.layers.bandwidth_bound_share(*ctx.peak), 0);
  ctx.peak.reset();
  EXPECT_EQ(judge(stats, ctx).bound, "compute");
}

TEST(VerdictBounds, ComputeIsNamedWhenNoBoundReachesItsModerateMarkHighlyFromItsHighMark) {
  const fitscope::detail::BoundRule& compute = fitscope::detail::compute_rule();
  EXPECT_EQ(std::string(compute.bound), "compute");
  const Verdict all = judge(steps(Phase::backward, 0.5), {});
  EXPECT_EQ(all.bound, "compute");
  EXPECT_EQ(all.level, "highly");
  EXPECT_NEAR(all.share, 1.0, 1e-9);
  // every other bound just under its moderate mark: compute below its high mark
  StepRecord r;
  double rest = 1;
  for (const auto& [phase, share] : std::initializer_list<std::pair<Phase, double>>{
           {Phase::data_wait, 0.049}, {Phase::callbacks, 0.049}, {Phase::checkpoint, 0.049}, {Phase::other, 0.029}, {Phase::comm, 0.029}}) {
    r.phase_ns[static_cast<std::size_t>(phase)] = static_cast<int64_t>(std::llround(share * kStepNs));
    rest -= share;
  }
  r.phase_ns[static_cast<std::size_t>(Phase::forward)] = static_cast<int64_t>(std::llround(rest * kStepNs));
  r.step_ns = kStepNs;
  PhaseStats stats(0);
  for (int i = 0; i < 20; ++i) stats.add(r);
  const Verdict v = judge(stats, {});
  EXPECT_EQ(v.bound, "compute");
  EXPECT_EQ(v.level, "moderately");
  EXPECT_LT(v.share, compute.high);
}
