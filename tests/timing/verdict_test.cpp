#include <gtest/gtest.h>

#include "fitscope/timing/verdict.hpp"

using namespace fitscope;

namespace {

/// Stats of identical steps with the given phase times (ns).
PhaseStats steps_with(std::initializer_list<std::pair<Phase, int64_t>> phases) {
  StepRecord r;
  for (const auto& [p, ns] : phases) {
    r.phase_ns[static_cast<std::size_t>(p)] = ns;
    r.step_ns += ns;
  }
  PhaseStats stats(0);
  for (int i = 0; i < 20; ++i) stats.add(r);
  return stats;
}

}  // namespace

TEST(Verdict, CallsARunWithMostlyDataWaitHighlyInputBoundAndNamesTheWorkersKnob) {
  VerdictContext ctx;
  ctx.workers = 1;
  const Verdict v = judge(steps_with({{Phase::data_wait, 600}, {Phase::forward, 400}}), ctx);
  EXPECT_EQ(v.bound, "input");
  EXPECT_EQ(v.level, "highly");
  EXPECT_NEAR(v.share, 0.6, 1e-9);
  EXPECT_NE(v.advice.find("raise --workers from 1 to 2"), std::string::npos) << v.advice;
}

TEST(Verdict, UsesTheModerateThresholds) {
  const Verdict input = judge(steps_with({{Phase::data_wait, 6}, {Phase::forward, 94}}), {});
  EXPECT_EQ(input.bound, "input");
  EXPECT_EQ(input.level, "moderately");
  const Verdict overhead = judge(steps_with({{Phase::other, 4}, {Phase::forward, 96}}), {});
  EXPECT_EQ(overhead.bound, "overhead");
  EXPECT_EQ(overhead.level, "moderately");
}

TEST(Verdict, PrefersTheMoreSevereCategory) {
  // input 10 % (moderately), callbacks 16 % (moderately), overhead 16 % (highly at 15 %)
  const Verdict v = judge(
      steps_with({{Phase::data_wait, 10}, {Phase::callbacks, 16}, {Phase::other, 16}, {Phase::forward, 58}}), {});
  EXPECT_EQ(v.bound, "overhead");
  EXPECT_EQ(v.level, "highly");
}

TEST(Verdict, CallsARunWithoutOverheadsComputeBound) {
  const Verdict v = judge(steps_with({{Phase::forward, 50}, {Phase::backward, 48}, {Phase::other, 2}}), {});
  EXPECT_EQ(v.bound, "compute");
  EXPECT_EQ(v.level, "highly");
  EXPECT_NEAR(v.share, 0.98, 1e-9);
}

TEST(Verdict, SaysNotWhenNothingWasMeasured) {
  const Verdict v = judge(PhaseStats(5), {});
  EXPECT_EQ(v.bound, "compute");
  EXPECT_EQ(v.level, "not");
}
