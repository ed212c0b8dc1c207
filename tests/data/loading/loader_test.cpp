#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <atomic>
#include <set>
#include <stdexcept>
#include <thread>
#include <tuple>

#include "fitscope/data/sources/cached_dataset.hpp"
#include "fitscope/data/loading/loader.hpp"
#include "fitscope/data/sources/map_dataset.hpp"
#include "fitscope/data/sources/subset_dataset.hpp"
#include "fitscope/data/sources/synthetic.hpp"
#include "fitscope/data/loading/transforms.hpp"

using namespace fitscope;

namespace {

std::shared_ptr<const TensorDataset> numbered(int64_t n) {
  return std::make_shared<TensorDataset>(at::arange(n, at::kFloat).view({n, 1}), at::arange(n, at::kLong), "numbers");
}

std::shared_ptr<const TensorDataset> images(int64_t n) {
  SyntheticOptions o;
  o.size = n;
  o.seed = 3;
  return std::make_shared<TensorDataset>(make_synthetic(o));
}

/// Every batch of epochs 0..epochs-1, in order.
std::vector<Batch> all_batches(Loader& loader, int64_t epochs) {
  std::vector<Batch> out;
  for (int64_t e = 0; e < epochs; ++e) {
    loader.set_epoch(e);
    for (int64_t b = 0; b < loader.num_batches(); ++b) out.push_back(loader.next());
  }
  return out;
}

std::vector<int64_t> targets_of(const std::vector<Batch>& batches) {
  std::vector<int64_t> out;
  for (const Batch& b : batches) {
    for (int64_t i = 0; i < b.size(); ++i) out.push_back(b.targets[i].item<int64_t>());
  }
  return out;
}

LoaderOptions options(int64_t batch_size, int64_t workers) {
  LoaderOptions o;
  o.batch_size = batch_size;
  o.workers = workers;
  o.seed = 11;
  return o;
}

}  // namespace

TEST(Loader, VisitsEveryExampleOncePerEpochInASeededOrder) {
  Loader loader(numbered(10), options(3, 0));
  ASSERT_EQ(loader.num_batches(), 4);
  const auto epoch0 = targets_of(all_batches(loader, 1));
  loader.set_epoch(1);
  std::vector<Batch> second;
  for (int64_t b = 0; b < 4; ++b) second.push_back(loader.next());
  const auto epoch1 = targets_of(second);
  EXPECT_EQ(epoch0.size(), 10u);
  EXPECT_EQ(std::set<int64_t>(epoch0.begin(), epoch0.end()).size(), 10u);
  EXPECT_NE(epoch0, epoch1);
  EXPECT_EQ(epoch0, targets_of(all_batches(loader, 1)));
}

TEST(Loader, KeepsOrDropsTheLastPartialBatch) {
  LoaderOptions o = options(4, 0);
  o.shuffle = false;
  Loader keep(numbered(10), o);
  EXPECT_EQ(keep.num_batches(), 3);
  EXPECT_EQ(all_batches(keep, 1).back().size(), 2);
  o.drop_last = true;
  EXPECT_EQ(Loader(numbered(10), o).num_batches(), 2);
}

TEST(Loader, ContinuesAnEpochWithTheRestItIsGivenEndingWithItsLastBatch) {
  for (const int64_t workers : {0, 2}) {
    Loader loader(numbered(20), options(4, workers));  // 5 batches
    loader.continue_epoch(3, 2, {7, 1, 9, 4, 0, 13, 5, 2, 11});  // batches 2, 3 and 4 (short)
    EXPECT_EQ(loader.epoch(), 3);
    EXPECT_EQ(loader.next_batch(), 2);
    std::vector<Batch> rest;
    for (int64_t b = 2; b < loader.num_batches(); ++b) rest.push_back(loader.next());
    ASSERT_EQ(rest.size(), 3u);
    EXPECT_EQ(rest[2].size(), 1);
    EXPECT_EQ(targets_of(rest), (std::vector<int64_t>{7, 1, 9, 4, 0, 13, 5, 2, 11}));
    loader.set_epoch(4);  // the next epoch is the sampler's whole pass again
    EXPECT_EQ(targets_of(all_batches(loader, 1)).size(), 20u);
  }
  Loader loader(numbered(20), options(4, 0));
  EXPECT_THROW(loader.continue_epoch(0, 2, {1, 2, 3, 4, 5, 6, 7, 8}), std::invalid_argument);  // batch 4 would be empty
  EXPECT_THROW(loader.continue_epoch(0, 4, {1, 2, 3, 4, 5}), std::invalid_argument);           // one batch holds 4
  EXPECT_THROW(loader.continue_epoch(0, 4, {20}), std::invalid_argument);                     // not an example
  EXPECT_NO_THROW(loader.continue_epoch(0, 5, {}));                                          // the epoch was over
}

TEST(Loader, GivesTheSameAugmentedBatchesWithZeroOneOrFourWorkers) {
  const auto data = images(300);
  std::vector<std::vector<Batch>> runs;
  for (int64_t workers : {0, 1, 4}) {
    LoaderOptions o = options(32, workers);
    o.prefetch = 3;
    o.transforms = parse_augment("flip,brightness");
    Loader loader(data, o);
    runs.push_back(all_batches(loader, 2));
  }
  for (std::size_t r = 1; r < runs.size(); ++r) {
    ASSERT_EQ(runs[r].size(), runs[0].size());
    for (std::size_t b = 0; b < runs[0].size(); ++b) {
      EXPECT_TRUE(at::equal(runs[r][b].inputs, runs[0][b].inputs)) << "run " << r << " batch " << b;
      EXPECT_TRUE(at::equal(runs[r][b].targets, runs[0][b].targets)) << "run " << r << " batch " << b;
    }
  }
}

TEST(Loader, AugmentsPerSampleAndDifferentlyEachEpoch) {
  const auto data = images(64);
  LoaderOptions o = options(64, 0);
  o.shuffle = false;
  o.transforms = {std::make_shared<RandomFlip>()};
  Loader loader(data, o);
  const auto batches = all_batches(loader, 2);
  const at::Tensor& original = data->inputs();
  int64_t flipped0 = 0, same0 = 0;
  for (int64_t i = 0; i < 64; ++i) {
    const bool flipped = at::equal(batches[0].inputs[i], original[i].flip({-1}));
    flipped0 += flipped;
    same0 += at::equal(batches[0].inputs[i], original[i]);
  }
  EXPECT_GT(flipped0, 10);
  EXPECT_GT(same0, 10);
  EXPECT_EQ(flipped0 + same0, 64);
  EXPECT_FALSE(at::equal(batches[0].inputs, batches[1].inputs));
  EXPECT_TRUE(at::equal(original, images(64)->inputs())) << "the data set must not be modified in place";
}

TEST(Loader, BrightnessShiftsEachSampleByOneDeltaWithinTheBound) {
  const auto data = images(40);
  LoaderOptions o = options(40, 0);
  o.shuffle = false;
  o.transforms = {std::make_shared<RandomBrightness>(0.25)};
  Loader loader(data, o);
  const at::Tensor delta = all_batches(loader, 1)[0].inputs - data->inputs();
  const at::Tensor per_sample = delta.flatten(1);
  EXPECT_TRUE(at::allclose(std::get<0>(per_sample.max(1)), std::get<0>(per_sample.min(1)), 1e-5, 1e-5));
  EXPECT_LE(per_sample.abs().max().item<float>(), 0.25f + 1e-6f);
}

TEST(Loader, RethrowsAWorkersErrorWithTheSampleIndexAndTheSource) {
  auto failing = std::make_shared<MapDataset>(
      numbered(40),
      [](Example e, int64_t index) {
        if (index == 17) throw std::runtime_error("cannot decode");
        return e;
      },
      "decode");
  for (int64_t workers : {0, 2}) {
    LoaderOptions o = options(8, workers);
    o.shuffle = false;
    Loader loader(failing, o);
    loader.set_epoch(0);
    EXPECT_NO_THROW(loader.next());
    EXPECT_NO_THROW(loader.next());
    try {
      loader.next();
      FAIL() << "expected the worker's error";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "batch 2: sample 17 of numbers | decode: cannot decode") << "workers " << workers;
    }
  }
}

TEST(Loader, StopsCleanlyWhenAbandonedMidEpochEvenWithASlowLoader) {
  LoaderOptions o = options(4, 3);
  o.delay_ms = 10000;  // a worker asleep in the delay must not hold up the shutdown
  const auto start = std::chrono::steady_clock::now();
  {
    Loader loader(numbered(100), o);
    loader.set_epoch(0);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  LoaderOptions quick = options(4, 2);
  Loader loader(numbered(100), quick);
  loader.set_epoch(0);
  loader.next();
  loader.stop();
  EXPECT_THROW(loader.next(), std::out_of_range);
  loader.set_epoch(1);
  EXPECT_EQ(all_batches(loader, 1).size(), 25u);
}

TEST(Loader, ReportsItsWorkersAndMeanQueueDepth) {
  LoaderOptions o = options(10, 2);
  o.prefetch = 4;
  Loader loader(numbered(100), o);
  all_batches(loader, 1);
  const LoaderStats s = loader.stats();
  EXPECT_EQ(s.workers, 2);
  EXPECT_EQ(s.prefetch, 4);
  EXPECT_EQ(s.batches, 10);
  EXPECT_GE(s.mean_queue_depth, 0.0);
  EXPECT_LE(s.mean_queue_depth, 4.0);
}

TEST(Loader, RejectsBadOptionsByName) {
  LoaderOptions o = options(4, -2);
  try {
    Loader(numbered(10), o);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "workers must be >= 0 or auto, got -2");
  }
  o = options(4, 1);
  o.prefetch = 0;
  EXPECT_THROW(Loader(numbered(10), o), std::invalid_argument);
}

namespace {
/// The numbers as a data set of another kind: not known to be held in memory (a user's own source).
class OpaqueNumbers : public Dataset {
 public:
  int64_t size() const override { return 40; }
  Example get(int64_t index) const override { return {at::full({1}, static_cast<float>(index)), at::tensor(index)}; }
};
}  // namespace

TEST(Loader, WithWorkersAutoBuildsCheapInMemoryBatchesOnTheCallingThreadAndSaysWhy) {
  // a batch of 8 single numbers is a copy of 64 bytes: far below what a handover through the queue costs
  Loader loader(numbered(40), options(8, LoaderOptions::kAuto));
  EXPECT_EQ(loader.stats().workers, 0);
  EXPECT_TRUE(loader.stats().auto_workers);
  ASSERT_EQ(loader.stats().changes.size(), 1u);
  EXPECT_EQ(training_thread_reason(loader.stats()).rfind("auto: a batch builds in ", 0), 0u) << training_thread_reason(loader.stats());
  Loader reference(numbered(40), options(8, 0));  // the same batches as workers 0 chosen by hand
  const std::vector<Batch> got = all_batches(loader, 2), want = all_batches(reference, 2);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t b = 0; b < want.size(); ++b) EXPECT_TRUE(at::equal(got[b].inputs, want[b].inputs)) << "batch " << b;
  EXPECT_EQ(training_thread_reason(reference.stats()), "workers set to 0");
  // a load delay, or data not known to be in memory, is never timed: the workers start at 1
  LoaderOptions delayed = options(8, LoaderOptions::kAuto);
  delayed.delay_ms = 1;
  EXPECT_EQ(Loader(numbered(40), delayed).stats().workers, 1);
  EXPECT_EQ(Loader(std::make_shared<OpaqueNumbers>(), options(8, LoaderOptions::kAuto)).stats().workers, 1);
}

TEST(Loader, WithWorkersAutoAddsWorkersToASlowLoaderAndKeepsTheBatchesOfOneWorker) {
  // each batch sleeps 4 ms and the consumer asks at once: one worker leaves it waiting all the time,
  // and a build that mostly sleeps lets the tuner jump to the count that hides it
  const auto data = images(1200);
  LoaderOptions tuned = options(2, LoaderOptions::kAuto);
  tuned.prefetch = LoaderOptions::kAuto;
  tuned.delay_ms = 4;
  tuned.transforms = parse_augment("flip,brightness");
  Loader loader(data, tuned);
  const std::vector<Batch> got = all_batches(loader, 2);
  LoaderOptions fixed = options(2, 0);
  fixed.transforms = tuned.transforms;
  Loader reference(data, fixed);
  const std::vector<Batch> want = all_batches(reference, 2);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t b = 0; b < want.size(); ++b) {
    ASSERT_TRUE(at::equal(got[b].inputs, want[b].inputs)) << "batch " << b;
    ASSERT_TRUE(at::equal(got[b].targets, want[b].targets)) << "batch " << b;
  }
  const LoaderStats s = loader.stats();
  EXPECT_TRUE(s.auto_workers);
  EXPECT_TRUE(s.auto_prefetch);
  ASSERT_GE(s.changes.size(), 2u);
  EXPECT_EQ(s.changes.front().workers, 1);
  EXPECT_NE(s.changes.front().why.find("start: workers auto, prefetch auto"), std::string::npos);
  int64_t most = 0;
  for (const LoaderChange& c : s.changes) {
    most = std::max(most, c.workers);
    EXPECT_GE(c.prefetch, c.workers);
    EXPECT_FALSE(c.why.empty());
  }
  EXPECT_GE(most, 3) << s.changes.back().why;
  EXPECT_EQ(s.workers, loader.options().workers);
  EXPECT_GT(s.batch_build_ms, 3.5);
  EXPECT_LT(s.batch_build_cpu_ms, s.batch_build_ms / 2);  // a sleep, not work
}

TEST(Loader, ShardsWithADistributedSampler) {
  std::multiset<int64_t> seen;
  for (int64_t rank = 0; rank < 3; ++rank) {
    LoaderOptions o = options(2, 1);
    o.sampler = std::make_shared<DistributedSampler>(10, DistributedSamplerOptions{rank, 3, true, 5, false});
    Loader loader(numbered(10), o);
    EXPECT_EQ(loader.num_batches(), 2);  // 4 indices per rank (10 padded to 12)
    for (int64_t t : targets_of(all_batches(loader, 1))) seen.insert(t);
  }
  EXPECT_EQ(seen.size(), 12u);
  EXPECT_EQ(std::set<int64_t>(seen.begin(), seen.end()).size(), 10u);
}

TEST(CachedDataset, ComputesEachExampleOnce) {
  auto calls = std::make_shared<std::atomic<int>>(0);
  auto counted = std::make_shared<MapDataset>(numbered(20), [calls](Example e, int64_t) {
    ++*calls;
    return e;
  });
  auto cached = std::make_shared<CachedDataset>(counted);
  LoaderOptions o = options(5, 2);
  Loader loader(cached, o);
  const auto first = targets_of(all_batches(loader, 3));
  EXPECT_EQ(calls->load(), 20);
  EXPECT_EQ(cached->cached(), 20);
  EXPECT_EQ(first.size(), 60u);
}

TEST(CachedDataset, StopsKeepingExamplesAtItsBudgetAndComputesTheRestEveryTime) {
  auto calls = std::make_shared<std::atomic<int>>(0);
  auto counted = std::make_shared<MapDataset>(numbered(20), [calls](Example e, int64_t) {
    ++*calls;
    return e;
  });
  const int64_t one = static_cast<int64_t>(counted->get(0).data.nbytes() + counted->get(0).target.nbytes());
  *calls = 0;
  auto cached = std::make_shared<CachedDataset>(counted, 5 * one);  // room for 5 of the 20
  Loader loader(cached, options(5, 0));
  const auto targets = targets_of(all_batches(loader, 3));
  EXPECT_EQ(cached->cached(), 5);
  EXPECT_EQ(cached->cached_bytes(), 5 * one);
  EXPECT_EQ(calls->load(), 20 + 2 * 15);  // the first epoch all, then only the 15 left out
  EXPECT_EQ(targets.size(), 60u);
  EXPECT_THROW(CachedDataset(counted, -1), std::invalid_argument);
}

TEST(SubsetDataset, SplitsAnyDataSetLikeKerasValidationSplit) {
  const auto [train, validation] = split_dataset(numbered(10), 0.3);
  EXPECT_EQ(train->size(), 7);
  EXPECT_EQ(validation->size(), 3);
  EXPECT_EQ(validation->get(0).target.item<int64_t>(), 7);
  EXPECT_EQ(validation->get_batch({2, 0}).targets[0].item<int64_t>(), 9);
}

TEST(Transforms, NormalizeUsesOneMeanAndStdPerChannel) {
  const at::Tensor x = at::ones({2, 3, 2, 2});
  Batch b{x * at::tensor({1.f, 2.f, 3.f}).view({1, 3, 1, 1}), at::zeros({2}, at::kLong)};
  const Batch out = Normalize({1, 2, 3}, {1, 2, 4}).apply(b, {});
  EXPECT_TRUE(at::allclose(out.inputs[1][2], at::zeros({2, 2})));
  EXPECT_TRUE(at::allclose(Normalize({1}, {2}).apply(b, {}).inputs[0][2], at::ones({2, 2})));
  try {
    Normalize({1, 2}, {1, 2}).apply(b, {});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "normalize has 2 channels, the inputs have 3");
  }
  // float inputs: a deviation past float's range would divide them to infinity, found only as a NaN loss
  for (const auto& [mean, std, message] :
       {std::tuple{0.5, 1e-45, "normalize: a standard deviation must be within float's range [1.17549e-38, 3.40282e+38], got 1e-45"},
        std::tuple{0.5, 0.0, "normalize: a standard deviation must be within float's range [1.17549e-38, 3.40282e+38], got 0"},
        std::tuple{1e39, 0.5, "normalize: a mean must be within float's range [-3.40282e+38, 3.40282e+38], got 1e+39"}}) {
    try {
      Normalize({mean}, {std});
      ADD_FAILURE() << message;
    } catch (const std::invalid_argument& e) {
      EXPECT_STREQ(e.what(), message);
    }
  }
}

TEST(Loader, KnowsItsEpochAndTheNextBatchItHandsOutWithOrWithoutWorkers) {
  for (const int workers : {0, 2}) {
    SCOPED_TRACE(workers);
    LoaderOptions o;
    o.batch_size = 4;
    o.workers = workers;
    o.shuffle = false;
    Loader loader(numbered(10), o);
    loader.set_epoch(3, 1);
    EXPECT_EQ(loader.epoch(), 3);
    EXPECT_EQ(loader.next_batch(), 1);
    EXPECT_EQ(loader.next().targets[0].item<int64_t>(), 4);
    EXPECT_EQ(loader.next_batch(), 2);
    loader.next();
    EXPECT_EQ(loader.next_batch(), loader.num_batches());
    loader.set_epoch(4);
    EXPECT_EQ(loader.epoch(), 4);
    EXPECT_EQ(loader.next_batch(), 0);
  }
}
