#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <random>

#include "fitscope/timing/phase_stats.hpp"
#include "fitscope/timing/streaming_quantiles.hpp"
#include "step_records.hpp"

using namespace fitscope;

TEST(StreamingQuantiles, StaysWithinOnePercentOfTheExactOrderStatistic) {
  std::mt19937_64 rng(42);
  std::lognormal_distribution<double> dist(13.0, 1.0);  // ~0.5 ms, heavy tail
  StreamingQuantiles q;
  std::vector<int64_t> values;
  for (int i = 0; i < 20000; ++i) {
    values.push_back(static_cast<int64_t>(dist(rng)));
    q.add(values.back());
  }
  std::sort(values.begin(), values.end());
  for (double p : {0.5, 0.9, 0.99}) {
    const auto rank = static_cast<std::size_t>(std::ceil(p * values.size())) - 1;
    const double exact = static_cast<double>(values[rank]);
    EXPECT_NEAR(q.quantile(p), exact, exact * 0.01) << "p=" << p;
  }
  EXPECT_EQ(q.max(), values.back());
  EXPECT_DOUBLE_EQ(q.mean(), std::accumulate(values.begin(), values.end(), 0.0) / values.size());
}

TEST(StreamingQuantiles, HandlesEmptySingleAndZeroValues) {
  StreamingQuantiles q;
  EXPECT_EQ(q.quantile(0.5), 0.0);
  q.add(0);
  EXPECT_EQ(q.quantile(0.99), 0.0);
  StreamingQuantiles one;
  one.add(12345);
  EXPECT_DOUBLE_EQ(one.quantile(0.5), 12345.0);  // clamped to the only value
  EXPECT_DOUBLE_EQ(one.quantile(0.99), 12345.0);
}

TEST(StreamingQuantiles, MergingTwoHalvesEqualsAddingEverything) {
  StreamingQuantiles a, b, all;
  for (int i = 1; i <= 1000; ++i) {
    (i % 2 ? a : b).add(i * 1000);
    all.add(i * 1000);
  }
  a.merge(b);
  EXPECT_EQ(a.count(), all.count());
  EXPECT_DOUBLE_EQ(a.quantile(0.9), all.quantile(0.9));
  EXPECT_DOUBLE_EQ(a.mean(), all.mean());
}

TEST(PhaseStats, LeavesTheWarmupStepsOutOfEveryDistribution) {
  PhaseStats stats(3);
  for (int i = 0; i < 3; ++i) stats.add(record(1'000'000'000, 0, 0));  // huge warm-up steps
  for (int i = 0; i < 10; ++i) stats.add(record(1'000'000, 0, 0));
  EXPECT_EQ(stats.steps(), 13);
  EXPECT_EQ(stats.measured_steps(), 10);
  EXPECT_NEAR(stats.step().max_ms, 1.0, 0.011);
  EXPECT_EQ(stats.measured_samples(), 320);
}

// measures() is the rule add() applies: a reader that asks it (a sweep's window) keeps the same steps.
TEST(PhaseStats, MeasuresTheRecordsAddPutsInTheDistributions) {
  PhaseStats stats(2);
  int64_t asked = 0;
  for (int i = 1; i <= 12; ++i) {
    StepRecord r = record(1'000'000, 0, 0);
    r.probed = i % 4 == 0;  // steps 4, 8 and 12: left out after the warm-up as well
    const int64_t before = stats.measured_steps();
    const bool measured = stats.measures(stats.steps() + 1, r);
    stats.add(r);
    EXPECT_EQ(measured, stats.measured_steps() == before + 1) << "record " << i;
    asked += measured;
  }
  EXPECT_EQ(asked, 12 - 2 - 3);
  EXPECT_EQ(stats.measured_steps(), asked);
  EXPECT_FALSE(stats.measures(1, record(1'000'000, 0, 0)));
  stats.extend_warmup(20);  // a thread search's cool-down: the rule as it stands now
  EXPECT_FALSE(stats.measures(13, record(1'000'000, 0, 0)));
}

TEST(PhaseStats, SharesAddUpToOneAndQuantilesAreOrdered) {
  PhaseStats stats(0);
  std::mt19937 rng(1);
  std::uniform_int_distribution<int64_t> d(1000, 5'000'000);
  for (int i = 0; i < 500; ++i) stats.add(record(d(rng), d(rng), d(rng) / 10));
  double total = 0;
  for (Phase p : all_phases()) {
    total += stats.share(p);
    const Distribution dist = stats.phase(p);
    EXPECT_LE(dist.p50_ms, dist.p90_ms);
    EXPECT_LE(dist.p90_ms, dist.p99_ms);
    EXPECT_LE(dist.p99_ms, dist.max_ms);
  }
  EXPECT_NEAR(total, 1.0, 1e-9);
}

TEST(PhaseStats, RejectsANegativeWarmup) {
  try {
    PhaseStats stats(-1);
    FAIL() << "expected an exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "warm-up steps must be >= 0, got -1");
  }
}
