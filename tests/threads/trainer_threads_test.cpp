// TrainerThreads' watch: the setting the search chose is searched again when the step moves mid-run
// (another load came), and not for a step that only wanders.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include "fitscope/summary/run_summary.hpp"
#include "fitscope/summary/summary_printout.hpp"
#include "fitscope/threads/trainer_threads.hpp"

using namespace fitscope;

namespace {

/// One process: the means stay as they are.
void as_they_are(std::vector<double>&) {}

/// Runs the search (or a re-check) to its end, each step taking `step_ms(setting)`: no step of it is
/// warm-up but the first search's.
void search(TrainerThreads& threads, const std::function<double(const ThreadSetting&)>& step_ms, int64_t& fit_step,
            bool rechecking = false) {
  for (int64_t steps = 0; threads.searching(); ++steps, ++fit_step) {
    ASSERT_LT(steps, 100000) << "the search does not end";
    const int64_t warmup = threads.after_step(step_ms(threads.choice().setting), 100000 - fit_step, as_they_are);
    if (rechecking) EXPECT_EQ(warmup, 0) << "step " << fit_step;
  }
}

}  // namespace

TEST(TrainerThreads, ReChecksTheSettingWhenTheStepMovesMidRunAndSaysWhatItMeasured) {
  TrainerThreads threads(ThreadOptions{}, 2);
  threads.plan(100000);
  ASSERT_TRUE(threads.searching());
  int64_t fit_step = 0;
  // alone on the machine, two intra-op threads are fastest
  search(threads, [](const ThreadSetting& s) { return s.intra_op > 1 ? 5.0 : 8.0; }, fit_step);
  ASSERT_EQ(threads.choice().setting, (ThreadSetting{2, 1}));
  // steps that wander by a fifth around their median do not move it: 2,000 steps, no re-check
  for (int64_t i = 0; i < 2000; ++i, ++fit_step) {
    EXPECT_FALSE(threads.watch(5.0 * (1 + 0.2 * std::sin(static_cast<double>(i))), fit_step)) << "step " << fit_step;
  }
  // another load takes a core: two threads now fight it, one does not
  const auto loaded = [](const ThreadSetting& s) { return s.intra_op > 1 ? 20.0 : 9.0; };
  int64_t began = -1;
  for (int64_t i = 0; i < 2000 && began < 0; ++i, ++fit_step) {
    if (threads.watch(loaded(threads.choice().setting), fit_step)) began = fit_step + 1;
  }
  ASSERT_GT(began, 0) << "no re-check";
  ASSERT_TRUE(threads.searching());
  search(threads, loaded, fit_step, /*rechecking=*/true);
  const ThreadChoice& choice = threads.choice();
  ASSERT_EQ(choice.rechecks.size(), 1u);
  const ThreadRecheck& r = choice.rechecks[0];
  EXPECT_EQ(r.step, began);
  EXPECT_NEAR(r.before_ms, 5.0, 1.0);
  EXPECT_EQ(r.moved_ms, 20.0);
  EXPECT_EQ(r.was, (ThreadSetting{2, 1}));
  EXPECT_EQ(r.chosen.intra_op, 1);
  EXPECT_EQ(choice.setting, r.chosen);
  EXPECT_EQ(r.candidates.size(), choice.candidates.size());
  // the warm-up's choice is still said as it was; the re-check beside it, in the printout and summary.json
  RunSummary summary;
  summary.threads = choice;
  const std::string printed = format_threads(summary);
  EXPECT_NE(printed.find("kept intra-op 2, BLAS 1: the fastest"), std::string::npos) << printed;
  EXPECT_NE(printed.find("re-checked at step " + std::to_string(began) + ", the step (less its data wait) having moved from "),
            std::string::npos) << printed;
  EXPECT_NE(printed.find("to 20.000 ms at the median: 2x1 20.000 ms"), std::string::npos) << printed;
  EXPECT_NE(printed.find("; switched to intra-op 1, BLAS "), std::string::npos) << printed;
  // the load goes on: the new setting's steps are the baseline now, and nothing moves them
  for (int64_t i = 0; i < 2000; ++i, ++fit_step) EXPECT_FALSE(threads.watch(loaded(threads.choice().setting), fit_step));
  EXPECT_EQ(threads.choice().rechecks.size(), 1u);
}

TEST(TrainerThreads, NeverReChecksASettingGivenOrSeveralRanksSetting) {
  ThreadOptions one;
  one.intra_op = 1;
  TrainerThreads fixed(one, 2);
  TrainerThreads ranks(ThreadOptions{}, 2, /*ranks=*/2);
  fixed.plan(100000);
  ranks.plan(100000);
  int64_t fit_step = 0;
  search(ranks, [](const ThreadSetting& s) { return s.intra_op > 1 ? 5.0 : 8.0; }, fit_step);
  for (int64_t i = 0; i < 4000; ++i, ++fit_step) {
    const double step = i < 1000 ? 5.0 : 50.0;
    EXPECT_FALSE(fixed.watch(step, fit_step));
    EXPECT_FALSE(ranks.watch(step, fit_step));
  }
  EXPECT_TRUE(fixed.choice().rechecks.empty());
  EXPECT_TRUE(ranks.choice().rechecks.empty());
}
