#include <gtest/gtest.h>

#include "fitscope/threads/thread_tuner.hpp"

using namespace fitscope;

using Next = ThreadTuner::Next;

/// Feeds `steps` and checks each answer: the last one's is `last`, every other one Next::step.
void feed(ThreadTuner& tuner, const std::vector<double>& steps, Next last) {
  for (std::size_t i = 0; i < steps.size(); ++i) {
    ASSERT_TRUE(tuner.searching());
    EXPECT_EQ(tuner.record(steps[i]), i + 1 == steps.size() ? last : Next::step) << "step " << i;
  }
}

TEST(ThreadTuner, RunsEachCandidateForASettlingStepAndTheMeasuredStepsThenKeepsTheFastestMean) {
  ThreadTuner tuner({{1, 1}, {2, 1}, {1, 2}}, 5);
  EXPECT_EQ(tuner.remaining_steps(), 20);
  // per candidate: settling steps (left out: three for the first, then one), then five measured steps;
  // a mean leaves out the slowest tenth, rounded up: one of five
  feed(tuner, {90, 50, 40, 10, 11, 12, 11, 30}, Next::size);
  EXPECT_EQ(tuner.first_mean_ms(), 11);
  tuner.size(5, 1);  // steps this long need no more: on to the next candidate
  EXPECT_EQ(tuner.current(), (ThreadSetting{2, 1}));
  feed(tuner, {1, 7, 30, 8, 30, 7}, Next::step);
  EXPECT_EQ(tuner.current(), (ThreadSetting{1, 2}));
  feed(tuner, {99, 9, 9, 9, 9, 9}, Next::choose);
  // {2, 1} has the shortest median (8) but stalls now and then: its mean (13) loses to {1, 2}'s 9
  EXPECT_EQ(tuner.means(), (std::vector<double>{11, 13, 9}));
  tuner.choose(tuner.means());
  EXPECT_FALSE(tuner.searching());
  EXPECT_EQ(tuner.remaining_steps(), 0);
  EXPECT_EQ(tuner.current(), (ThreadSetting{1, 2}));
  EXPECT_EQ(tuner.candidates()[1].step_ms, 13);
  EXPECT_EQ(tuner.steps_run(), 20);
}

TEST(ThreadTuner, IsSizedByTheFirstCandidatesStepsAndSettlesLongerAfterMoreThreads) {
  ThreadTuner tuner({{1, 2}, {1, 1}, {2, 1}}, 2);
  EXPECT_EQ(tuner.remaining_steps(), 3 + 2 + 2 * (1 + 2));
  feed(tuner, {9, 9, 9, 2, 4}, Next::size);
  EXPECT_EQ(tuner.first_mean_ms(), 2);  // of two steps, the slower is the tenth left out
  EXPECT_EQ(tuner.remaining_steps_if_sized(6, 4), 4 + (4 + 6) + (1 + 6));
  tuner.size(6, 4);  // 6 measured steps each; 4 settling after a candidate with more threads
  // grown, the first candidate measures its 6 steps afresh: the run's first steps are left out
  EXPECT_EQ(tuner.first_mean_ms(), 0);
  EXPECT_EQ(tuner.remaining_steps(), 6 + (4 + 6) + (1 + 6));
  feed(tuner, {3, 3, 3, 3, 3, 3}, Next::step);
  // {1, 1} runs fewer BLAS threads than {1, 2}: its first 4 steps are left out
  EXPECT_EQ(tuner.current(), (ThreadSetting{1, 1}));
  feed(tuner, {50, 50, 50, 50, 2, 2, 2, 2, 2, 2}, Next::step);
  // {2, 1} adds a thread: one settling step
  EXPECT_EQ(tuner.current(), (ThreadSetting{2, 1}));
  feed(tuner, {50, 4, 4, 4, 4, 4, 4}, Next::choose);
  EXPECT_EQ(tuner.means(), (std::vector<double>{3, 2, 4}));
  EXPECT_EQ(tuner.steps_run(), 28);
  // a size smaller than the measured steps never shortens the search
  ThreadTuner other({{1, 1}, {2, 1}}, 4);
  feed(other, {1, 1, 1, 1, 1, 1, 1}, Next::size);
  other.size(1, 1);
  EXPECT_EQ(other.current(), (ThreadSetting{2, 1}));
  EXPECT_EQ(other.remaining_steps(), 1 + 4);
}

TEST(ThreadTuner, ALoneStallInACandidatesStepsDoesNotDecide) {
  ThreadTuner tuner({{1, 2}, {1, 1}}, 10);
  feed(tuner, {9, 9, 9, 1, 1, 1, 1, 1, 1, 1, 1, 1, 30}, Next::size);  // one stall in ten steps
  EXPECT_EQ(tuner.first_mean_ms(), 1);
  // nor among fewer steps, which a short run's budget leaves a candidate: one of 20 ms among eight of 2
  // once chose a setting three times slower
  ThreadTuner few({{2, 1}, {1, 1}}, 8);
  feed(few, {9, 9, 9, 2, 2, 2, 20, 2, 2, 2, 2}, Next::size);
  EXPECT_EQ(few.first_mean_ms(), 2);
}

TEST(ThreadTuner, DecidesOnTheMeansItIsGivenSoRanksCanAgreeOnSums) {
  ThreadTuner tuner({{1, 1}, {2, 1}}, 1);
  for (double ms : {5.0, 5.0, 5.0, 5.0, 5.0, 4.0}) tuner.record(ms);
  tuner.choose({9.0, 12.0});  // summed over ranks, the single thread wins
  EXPECT_EQ(tuner.current(), (ThreadSetting{1, 1}));
}

TEST(ThreadTuner, KeepsTheDefaultUnlessAnotherIsClearlyFaster) {
  ThreadTuner tuner({{1, 2}, {1, 1}}, 1);
  tuner.choose({10.0, 9.6});  // 4% faster: within the noise, the first (the default) stays
  EXPECT_EQ(tuner.current(), (ThreadSetting{1, 2}));
  ThreadTuner other({{1, 2}, {1, 1}}, 1);
  other.choose({10.0, 9.4});  // 6% faster: it wins
  EXPECT_EQ(other.current(), (ThreadSetting{1, 1}));
}

TEST(ThreadTuner, LeavesAPlainlySlowerCandidateAfterAFewStepsWhenAllowed) {
  ThreadTuner tuner({{1, 1}, {2, 1}, {1, 2}}, 2);
  tuner.abandon_slower(1.5);
  feed(tuner, {9, 9, 9, 1, 1}, Next::size);
  tuner.size(10, 1);
  feed(tuner, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, Next::step);  // the first candidate measures 10 steps afresh
  EXPECT_EQ(tuner.current(), (ThreadSetting{2, 1}));
  // {2, 1} settles one step, then measures 3 steps at 3x: left there, not after 10
  feed(tuner, {50, 3, 3, 3}, Next::step);
  EXPECT_EQ(tuner.current(), (ThreadSetting{1, 2}));
  EXPECT_EQ(tuner.means()[1], 3);
  // a candidate as fast as the first runs all its steps
  feed(tuner, {50, 1, 1, 1, 1, 1, 1, 1, 1, 1}, Next::step);
  feed(tuner, {1}, Next::choose);
}

TEST(ThreadTuner, HasNothingToMeasureWithOneCandidate) {
  ThreadTuner tuner({{1, 1}}, 5);
  EXPECT_FALSE(tuner.searching());
  EXPECT_EQ(tuner.remaining_steps(), 0);
  EXPECT_EQ(tuner.record(3.0), Next::step);
  EXPECT_EQ(tuner.current(), (ThreadSetting{1, 1}));
}

TEST(ThreadTuner, RejectsAnEmptySearch) {
  EXPECT_THROW(ThreadTuner({}, 5), std::invalid_argument);
  EXPECT_THROW(ThreadTuner({{1, 1}}, 0), std::invalid_argument);
}

TEST(ThreadPolicy, CandidatesParalleliseOneLevelAtATime) {
  const std::vector<ThreadSetting> two = thread_candidates(2, true);
  EXPECT_EQ(two, (std::vector<ThreadSetting>{{2, 1}, {1, 2}, {1, 1}}));
  EXPECT_EQ(thread_candidates(6, false), (std::vector<ThreadSetting>{{6, 1}, {1, 1}, {2, 1}, {4, 1}}));
  EXPECT_EQ(thread_candidates(1, true), (std::vector<ThreadSetting>{{1, 1}}));
}
