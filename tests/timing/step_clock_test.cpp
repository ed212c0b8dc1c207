#include <gtest/gtest.h>

#include <thread>

#include "fitscope/timing/step_clock.hpp"

using namespace fitscope;

namespace {
void spin_for(std::chrono::microseconds d) {
  const auto end = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < end) {
  }
}
}  // namespace

TEST(StepClock, AttributesUnclaimedTimeToOtherSoThePhasesAddUpToTheStep) {
  StepClock clock;
  clock.begin_step(2, 7);
  clock.enter(Phase::data_wait);
  spin_for(std::chrono::microseconds(200));
  clock.enter(Phase::forward);
  spin_for(std::chrono::microseconds(300));
  clock.leave();
  spin_for(std::chrono::microseconds(100));  // nobody's
  {
    PhaseTimer timer(clock, Phase::callbacks);
    spin_for(std::chrono::microseconds(100));
  }
  const StepRecord& r = clock.end_step();
  EXPECT_EQ(r.epoch, 2);
  EXPECT_EQ(r.batch, 7);
  int64_t sum = 0;
  for (int64_t ns : r.phase_ns) sum += ns;
  EXPECT_EQ(sum, r.step_ns);
  EXPECT_GE(r.phase(Phase::data_wait), 200'000);
  EXPECT_GE(r.phase(Phase::forward), 300'000);
  EXPECT_GE(r.phase(Phase::callbacks), 100'000);
  EXPECT_GE(r.phase(Phase::other), 100'000);
  EXPECT_EQ(r.phase(Phase::backward), 0);
}

TEST(StepClock, StartsEveryStepFromZero) {
  StepClock clock;
  clock.begin_step(0, 0);
  clock.enter(Phase::forward);
  spin_for(std::chrono::microseconds(100));
  clock.end_step();
  clock.begin_step(0, 1);
  const StepRecord& r = clock.end_step();
  EXPECT_EQ(r.batch, 1);
  EXPECT_EQ(r.phase(Phase::forward), 0);
}

TEST(StepClock, EnteringTheSamePhaseTwiceAccumulates) {
  StepClock clock;
  clock.begin_step(0, 0);
  clock.enter(Phase::callbacks);
  spin_for(std::chrono::microseconds(100));
  clock.enter(Phase::forward);
  clock.enter(Phase::callbacks);
  spin_for(std::chrono::microseconds(100));
  const StepRecord& r = clock.end_step();
  EXPECT_GE(r.phase(Phase::callbacks), 200'000);
}
