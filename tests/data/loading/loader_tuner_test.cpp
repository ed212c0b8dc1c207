// The controller behind --workers auto alone: windows from a model of a loader and a step, no threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "fitscope/data/loading/loader_tuner.hpp"

using namespace fitscope;

namespace {

/// A loader whose batch takes `build_ms` (`cpu_share` of it computing) beside a step of `step_ms`
/// on `cores` cores: the window that half a second at `s` gives.
struct Pipeline {
  double build_ms, cpu_share, step_ms, cores;
  double contention = 0.04;  // throughput lost per worker computing beyond the cores left by the step

  double throughput(const LoaderSetting& s) const {  // batches per ms
    const double w = static_cast<double>(s.workers);
    double rate = std::min(1 / step_ms, w / build_ms);
    if (cpu_share > 0.5) {
      rate = std::min(rate, cores / (build_ms * cpu_share + step_ms));
      rate *= 1 - contention * std::max(0.0, w - (cores - 1));
    }
    return rate;
  }
  LoaderWindow window(const LoaderSetting& s) const {
    const double rate = throughput(s);
    LoaderWindow w;
    w.seconds = 0.5;
    w.batches = static_cast<int64_t>(rate * 500);
    w.wait_s = 0.5 * std::max(0.0, 1 - rate * step_ms);
    w.built = w.batches;
    w.build_s = static_cast<double>(w.built) * build_ms * 1e-3;
    w.build_cpu_s = w.build_s * cpu_share;
    return w;
  }
  /// The best of the fixed worker counts the benchmark tries.
  double best_fixed() const {
    double best = 0;
    for (int64_t w : {1, 2, 4, 8, 16}) best = std::max(best, throughput({w, 2 * w}));
    return best;
  }
};

/// Runs `windows` windows; returns the mean throughput of the last half.
double run(LoaderTuner& tuner, const Pipeline& p, int windows) {
  double sum = 0;
  for (int i = 0; i < windows; ++i) {
    if (i >= windows / 2) sum += p.throughput(tuner.setting());
    tuner.observe(p.window(tuner.setting()));
  }
  return sum / (windows - windows / 2);
}

}  // namespace

TEST(LoaderTuner, JumpsToTheWorkersThatHideASleepingBuildAndThenTrimsThem) {
  const Pipeline sleepy{1.0, 0.05, 0.125, 2};
  LoaderTuner tuner({1, 2}, {});
  ASSERT_TRUE(tuner.observe(sleepy.window(tuner.setting())));
  EXPECT_EQ(tuner.setting().workers, 10);  // 1.25 x 1 ms / 0.125 ms
  EXPECT_EQ(tuner.setting().prefetch, 20);
  EXPECT_NE(tuner.why().find("the step waited 87.5% of 0.50 s"), std::string::npos) << tuner.why();
  EXPECT_NE(tuner.why().find("trying 10 workers, prefetch 20"), std::string::npos) << tuner.why();
  const double late = run(tuner, sleepy, 60);
  EXPECT_GE(late, 0.95 * sleepy.best_fixed());  // trials of fewer workers were undone
}

TEST(LoaderTuner, AddsComputingWorkersOneAtATimeAndGoesBackWhenAnotherDoesNotPay) {
  const Pipeline decode{3.0, 0.95, 1.0, 2};
  LoaderTuner tuner({1, 2}, {});
  ASSERT_TRUE(tuner.observe(decode.window(tuner.setting())));
  EXPECT_EQ(tuner.setting().workers, 2);
  const double late = run(tuner, decode, 80);
  EXPECT_GE(late, 0.95 * decode.best_fixed());
  EXPECT_LE(tuner.setting().workers, 3);
}

TEST(LoaderTuner, LeavesAComputeBoundStepItsOneWorker) {
  const Pipeline light{0.1, 0.9, 10.0, 2};
  LoaderTuner tuner({1, 2}, {});
  for (int i = 0; i < 40; ++i) EXPECT_FALSE(tuner.observe(light.window(tuner.setting())));
  EXPECT_EQ(tuner.setting().workers, 1);
}

TEST(LoaderTuner, RemovesASpareWorkerWhileTheRestKeepTheirHeadroom) {
  const Pipeline sleepy{1.0, 0.05, 0.3, 2};  // 4 workers just hide it; 5 hide it with 1.25x to spare
  LoaderTuner tuner({6, 12}, {});
  ASSERT_TRUE(tuner.observe(sleepy.window(tuner.setting())));
  EXPECT_EQ(tuner.setting().workers, 5);
  for (int i = 0; i < 8; ++i) EXPECT_FALSE(tuner.observe(sleepy.window(tuner.setting())));  // kept, and no further
  EXPECT_EQ(tuner.setting().workers, 5);
}

TEST(LoaderTuner, UndoesARemovalThatMakesTheStepWait) {
  // the windows as a loader measured them: at 4 workers the step never waited and a build looked short
  // enough for 3; at 3 it waited 10 %
  const auto window = [](double wait_s) {
    LoaderWindow w;
    w.seconds = 0.5;
    w.batches = 1000;
    w.wait_s = wait_s;
    w.built = 1000;
    w.build_s = 0.5;  // 0.5 ms a batch, mostly asleep
    w.build_cpu_s = 0.02;
    return w;
  };
  LoaderTuner tuner({4, 8}, {});
  ASSERT_TRUE(tuner.observe(window(0)));
  EXPECT_EQ(tuner.setting().workers, 3);
  ASSERT_TRUE(tuner.observe(window(0.05)));
  EXPECT_EQ(tuner.setting().workers, 4);
  EXPECT_NE(tuner.why().find("back to 4 workers, prefetch 8, not tried again for 4 windows"), std::string::npos)
      << tuner.why();
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(tuner.observe(window(0)));
  EXPECT_TRUE(tuner.observe(window(0)));  // tried again after 4 windows
}

TEST(LoaderTuner, DeepensThePrefetchWhenTheStepWaitsOnIdleWorkersAndKeepsFixedWorkers) {
  LoaderTuner::Options o;
  o.tune_workers = false;
  LoaderTuner tuner({3, 6}, o);
  LoaderWindow bursty;  // the step waited 10 % while the workers were busy a third of the time
  bursty.seconds = 0.5;
  bursty.batches = 100;
  bursty.wait_s = 0.05;
  bursty.built = 100;
  bursty.build_s = 0.5;
  bursty.build_cpu_s = 0.5;
  ASSERT_TRUE(tuner.observe(bursty));
  EXPECT_EQ(tuner.setting().workers, 3);
  EXPECT_EQ(tuner.setting().prefetch, 12);
  bursty.batches = 101;  // +1 %: not worth it
  ASSERT_TRUE(tuner.observe(bursty));
  EXPECT_EQ(tuner.setting().prefetch, 6);
}

TEST(LoaderTuner, StaysWithinTheMemoryBudgetForQueuedBatches) {
  const Pipeline sleepy{1.0, 0.05, 0.1, 2};
  LoaderTuner tuner({1, 2}, {});
  tuner.set_max_prefetch(5);
  run(tuner, sleepy, 20);
  EXPECT_LE(tuner.setting().workers, 5);
  EXPECT_LE(tuner.setting().prefetch, 5);
  LoaderTuner fixed_depth({2, 3}, {true, false, 16, 64});
  EXPECT_EQ(fixed_depth.setting().prefetch, 3);
  EXPECT_THROW(LoaderTuner({0, 2}, {}), std::invalid_argument);
}
