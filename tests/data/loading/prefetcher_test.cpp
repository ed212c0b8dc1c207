// The prefetcher and the samplers alone (no libtorch): also built under ThreadSanitizer.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <set>
#include <stdexcept>
#include <thread>

#include "fitscope/data/loading/detail/prefetcher.hpp"
#include "fitscope/data/sources/sampler.hpp"

using namespace fitscope;

TEST(Prefetcher, HandsOutItemsInIndexOrderWhateverTheWorkersTiming) {
  Prefetcher<int64_t> prefetcher(4, 6);
  prefetcher.start(200, [](int64_t i, const StopToken&) {
    if (i % 7 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));  // finish out of order
    return i * i;
  });
  for (int64_t i = 0; i < 200; ++i) ASSERT_EQ(prefetcher.next(), i * i);
  EXPECT_THROW(prefetcher.next(), std::out_of_range);
}

TEST(Prefetcher, NeverRunsMoreThanDepthAheadOfTheConsumer) {
  Prefetcher<int64_t> prefetcher(3, 5);
  std::atomic<int64_t> highest{-1};
  std::atomic<int64_t> consumed{0};
  std::atomic<bool> violated{false};
  prefetcher.start(100, [&](int64_t i, const StopToken&) {
    // `consumed` lags the prefetcher's own count by the item being handed out, hence + 1
    if (i >= consumed.load() + 5 + 1) violated = true;
    int64_t h = highest.load();
    while (i > h && !highest.compare_exchange_weak(h, i)) {
    }
    return i;
  });
  for (int64_t i = 0; i < 100; ++i) {
    EXPECT_EQ(prefetcher.next(), i);
    consumed = i + 1;
  }
  EXPECT_FALSE(violated.load());
  EXPECT_EQ(highest.load(), 99);
}

TEST(Prefetcher, RethrowsAJobsErrorAtItsIndexAndGoesOn) {
  Prefetcher<int> prefetcher(2, 2);
  prefetcher.start(5, [](int64_t i, const StopToken&) {
    if (i == 2) throw std::runtime_error("item 2 is bad");
    return static_cast<int>(i);
  });
  EXPECT_EQ(prefetcher.next(), 0);
  EXPECT_EQ(prefetcher.next(), 1);
  try {
    prefetcher.next();
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "item 2 is bad");
  }
  EXPECT_EQ(prefetcher.next(), 3);
  EXPECT_EQ(prefetcher.next(), 4);
}

TEST(Prefetcher, CancelInterruptsSleepingJobsAndAStartedPassCanFollow) {
  Prefetcher<int> prefetcher(2, 4);
  std::atomic<int> started{0}, interrupted{0};
  prefetcher.start(10, [&](int64_t, const StopToken& stop) {
    ++started;
    if (!stop.sleep_for(std::chrono::hours(1))) ++interrupted;
    return 0;
  });
  while (started.load() < 2) std::this_thread::yield();
  prefetcher.cancel();  // returns only when the sleeping jobs have noticed
  EXPECT_EQ(interrupted.load(), 2);
  prefetcher.start(3, [](int64_t i, const StopToken& stop) { return stop.stop_requested() ? -1 : static_cast<int>(i); });
  EXPECT_EQ(prefetcher.next(), 0);
  EXPECT_EQ(prefetcher.next(), 1);
  EXPECT_EQ(prefetcher.next(), 2);
}

TEST(Prefetcher, DestructorJoinsWorkersInTheMiddleOfAPass) {
  std::atomic<int> built{0};
  {
    Prefetcher<int> prefetcher(3, 3);
    prefetcher.start(1000, [&](int64_t i, const StopToken&) {
      ++built;
      return static_cast<int>(i);
    });
    prefetcher.next();
  }
  EXPECT_LE(built.load(), 1 + 3 + 3);
}

TEST(Prefetcher, ReportsTheMeanQueueDepthWhenTheConsumerIsSlow) {
  Prefetcher<int> prefetcher(2, 4);
  prefetcher.start(20, [](int64_t i, const StopToken&) { return static_cast<int>(i); });
  for (int i = 0; i < 20; ++i) {
    // the workers are woken when half of the queue is free, so at least 2 of 4 items are ready
    while (prefetcher.ready() < std::min(2, 20 - i)) std::this_thread::yield();
    prefetcher.next();
  }
  EXPECT_GE(prefetcher.mean_depth(), 1.9);
}

TEST(Prefetcher, ChangesItsWorkersAndDepthInTheMiddleOfAPassWithoutChangingAnItem) {
  Prefetcher<int64_t> prefetcher(1, 1);
  std::atomic<int64_t> running{0}, most_late{0}, arrived{0};
  std::atomic<bool> never_four{false};
  prefetcher.start(300, [&](int64_t i, const StopToken&) {
    const int64_t now = ++running;
    if (i >= 100 && i < 104) {  // these four meet only when four workers build at once
      ++arrived;
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (arrived.load() < 4 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
      if (arrived.load() < 4) never_four = true;
    }
    if (i >= 150) {  // built after the workers went back to one
      int64_t m = most_late.load();
      while (now > m && !most_late.compare_exchange_weak(m, now)) {
      }
    }
    --running;
    return i * 3;
  });
  int64_t i = 0;
  for (; i < 100; ++i) ASSERT_EQ(prefetcher.next(), i * 3);
  prefetcher.set_workers(4);
  prefetcher.set_depth(8);
  EXPECT_EQ(prefetcher.workers(), 4);
  EXPECT_EQ(prefetcher.depth(), 8);
  for (; i < 120; ++i) ASSERT_EQ(prefetcher.next(), i * 3);
  EXPECT_FALSE(never_four.load());
  prefetcher.set_workers(1);
  prefetcher.set_depth(2);
  EXPECT_EQ(prefetcher.depth(), 2);
  for (; i < 300; ++i) ASSERT_EQ(prefetcher.next(), i * 3);
  EXPECT_EQ(most_late.load(), 1);
  EXPECT_THROW(prefetcher.set_workers(0), std::invalid_argument);
  EXPECT_THROW(prefetcher.set_depth(0), std::invalid_argument);
}

TEST(Sampler, RandomOrderIsASeededPermutationPerEpoch) {
  RandomSampler a(100, 7), b(100, 7);
  const auto first = a.indices();
  EXPECT_EQ(first, b.indices());
  EXPECT_EQ(std::set<int64_t>(first.begin(), first.end()).size(), 100u);
  a.set_epoch(1);
  EXPECT_NE(a.indices(), first);
  EXPECT_NE(RandomSampler(100, 8).indices(), first);
}

TEST(Sampler, DistributedShardsCoverEveryIndexAcrossOneToFourRanks) {
  for (int64_t size : {4, 7, 10, 12, 97}) {  // (a set smaller than the world repeats more)
    for (int64_t world = 1; world <= 4; ++world) {
      for (bool drop_last : {false, true}) {
        std::vector<int64_t> count(static_cast<std::size_t>(size), 0);
        int64_t total = 0;
        for (int64_t rank = 0; rank < world; ++rank) {
          DistributedSampler s(size, {rank, world, true, 3, drop_last});
          s.set_epoch(2);
          const auto shard = s.indices();
          ASSERT_EQ(static_cast<int64_t>(shard.size()), s.shard_size());
          for (int64_t i : shard) ++count[static_cast<std::size_t>(i)];
          total += static_cast<int64_t>(shard.size());
        }
        const DistributedSampler any(size, {0, world, true, 3, drop_last});
        int64_t twice = 0, never = 0;
        for (int64_t c : count) {
          ASSERT_LE(c, 2);
          twice += c == 2;
          never += c == 0;
        }
        if (drop_last) {
          EXPECT_EQ(twice, 0);
          EXPECT_EQ(total, size - never) << size << "/" << world;
          EXPECT_LT(never, world);
        } else {
          EXPECT_EQ(never, 0) << size << "/" << world;
          EXPECT_EQ(twice, any.padding());
          EXPECT_EQ(total, size + any.padding());
        }
      }
    }
  }
}

TEST(Sampler, RejectsARankOutsideTheWorld) {
  try {
    DistributedSampler(10, {4, 4, true, 0, false});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "rank 4 outside a world of 4");
  }
}
