#include <gtest/gtest.h>

#include "fitscope/threads/thread_tuner.hpp"

using namespace fitscope;

TEST(ThreadTuner, RunsEachCandidateForASettlingStepAndTheMeasuredStepsThenKeepsTheFastestMedian) {
  ThreadTuner tuner({{1, 1}, {2, 1}, {1, 2}}, 3);
  EXPECT_EQ(tuner.remaining_steps(), 14);
  // per candidate: settling steps (left out: three for the first, then one), then three measured steps
  const std::vector<std::vector<double>> steps = {{90, 50, 40, 10, 11, 12}, {1, 7, 30, 8}, {99, 9, 9, 9}};
  for (std::size_t c = 0; c < steps.size(); ++c) {
    for (std::size_t i = 0; i < steps[c].size(); ++i) {
      ASSERT_TRUE(tuner.searching());
      EXPECT_EQ(tuner.current(), tuner.candidates()[c].setting);
      const bool last = c + 1 == steps.size() && i + 1 == steps[c].size();
      EXPECT_EQ(tuner.record(steps[c][i]), last);
    }
  }
  EXPECT_EQ(tuner.medians(), (std::vector<double>{11, 8, 9}));
  tuner.choose(tuner.medians());
  EXPECT_FALSE(tuner.searching());
  EXPECT_EQ(tuner.remaining_steps(), 0);
  EXPECT_EQ(tuner.current(), (ThreadSetting{2, 1}));
  EXPECT_EQ(tuner.candidates()[1].step_ms, 8);
  EXPECT_EQ(tuner.steps_run(), 14);
}

TEST(ThreadTuner, DecidesOnTheMediansItIsGivenSoRanksCanAgreeOnSums) {
  ThreadTuner tuner({{1, 1}, {2, 1}}, 1);
  for (double ms : {5.0, 5.0, 5.0, 5.0, 5.0, 4.0}) tuner.record(ms);
  tuner.choose({9.0, 12.0});  // summed over ranks, the single thread wins
  EXPECT_EQ(tuner.current(), (ThreadSetting{1, 1}));
}

TEST(ThreadTuner, HasNothingToMeasureWithOneCandidate) {
  ThreadTuner tuner({{1, 1}}, 5);
  EXPECT_FALSE(tuner.searching());
  EXPECT_EQ(tuner.remaining_steps(), 0);
  EXPECT_FALSE(tuner.record(3.0));
  EXPECT_EQ(tuner.current(), (ThreadSetting{1, 1}));
}

TEST(ThreadTuner, RejectsAnEmptySearch) {
  EXPECT_THROW(ThreadTuner({}, 5), std::invalid_argument);
  EXPECT_THROW(ThreadTuner({{1, 1}}, 0), std::invalid_argument);
}

TEST(ThreadPolicy, CandidatesParalleliseOneLevelAtATime) {
  const std::vector<ThreadSetting> two = thread_candidates(2, true);
  EXPECT_EQ(two, (std::vector<ThreadSetting>{{1, 2}, {1, 1}, {2, 1}}));
  EXPECT_EQ(thread_candidates(6, false), (std::vector<ThreadSetting>{{1, 1}, {2, 1}, {4, 1}, {6, 1}}));
  EXPECT_EQ(thread_candidates(1, true), (std::vector<ThreadSetting>{{1, 1}}));
}
