#include <gtest/gtest.h>

#include <random>

#include "fitscope/timing/memory_stats.hpp"

using namespace fitscope;

namespace memory_stats_test {

/// A step whose forward peaks at `forward` above its start, backward at `backward`.
void add(MemoryStats& m, int64_t forward, int64_t backward, int64_t held) {
  std::array<int64_t, kPhaseCount> peak{}, allocated{};
  peak[static_cast<std::size_t>(Phase::forward)] = forward;
  peak[static_cast<std::size_t>(Phase::backward)] = backward;
  allocated[static_cast<std::size_t>(Phase::forward)] = forward;
  allocated[static_cast<std::size_t>(Phase::backward)] = 2 * backward;
  m.add_step(peak, allocated, held);
}

}  // namespace memory_stats_test

using namespace memory_stats_test;

TEST(MemoryStats, APhasesPeakIsItsLargestAndTheStepsIsItsLargestPhase) {
  MemoryStats m;
  add(m, 100, 300, 0);
  add(m, 200, 100, 0);
  EXPECT_EQ(m.phase(Phase::forward).peak_bytes, 200);
  EXPECT_DOUBLE_EQ(m.phase(Phase::forward).mean_peak_bytes, 150);
  EXPECT_DOUBLE_EQ(m.phase(Phase::backward).allocated_bytes, 400);
  EXPECT_EQ(m.step_peak_bytes(), 300);
  EXPECT_DOUBLE_EQ(m.mean_step_peak_bytes(), 250);
  EXPECT_DOUBLE_EQ(m.allocated_per_step(), 150 + 400);
}

/// A leak of 1 MB a step is found within 500 steps; a steady run of 10,000 steps whose held bytes jitter
/// by a few batches (a prefetch queue) raises no alarm; too few steps are not judged.
TEST(MemoryStats, ALeakOfAMegabyteAStepIsFoundAndASteadyRunIsNot) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int64_t> batches(0, 4);
  MemoryStats leaking;
  for (int64_t i = 0; i < 500; ++i) add(leaking, 1, 1, 50'000'000 + i * 1'000'000 + batches(rng) * 100'000);
  const MemoryGrowth g = leaking.growth();
  EXPECT_TRUE(g.leak);
  EXPECT_EQ(g.steps, 250);
  EXPECT_NEAR(g.bytes_per_step, 1e6, 1e4);
  EXPECT_LT(g.low, 1e6);
  EXPECT_GT(g.high, 1e6);

  MemoryStats steady;
  for (int64_t i = 0; i < 2'000; ++i) add(steady, 1, 1, 10'000'000 + i * 20'000);  // a cache filling in the first epoch
  for (int64_t i = 0; i < 10'000; ++i) add(steady, 1, 1, 50'000'000 + batches(rng) * 400'000);
  EXPECT_FALSE(steady.growth().leak) << steady.growth().bytes_per_step;

  MemoryStats short_run;
  for (int64_t i = 0; i < 60; ++i) add(short_run, 1, 1, i * 1'000'000);
  EXPECT_EQ(short_run.growth().steps, 0);
  EXPECT_FALSE(short_run.growth().leak);
}
