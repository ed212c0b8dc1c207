// StreamDataset and the Loader reading it: the batches of a stream are the same for any number of
// workers and hold every record once an epoch; a loader set to a recorded position, or reading its
// records again, hands out the batches an uninterrupted one does; ranks split the shards; bad records
// are named or skipped.

#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "fitscope/data/loading/loader.hpp"
#include "fitscope/data/streams/stream_dataset.hpp"
#include "fitscope/data/streams/synthetic_shards.hpp"
#include "fitscope/data/formats/tf_example.hpp"
#include "fitscope/data/formats/tfrecord_format.hpp"
#include "../data_files_test.hpp"

using namespace fitscope;

namespace {

class StreamDatasetTest : public DataFilesTest {
 protected:
  /// `count` 8x8 images of the built-in set as `shards` TFRecord shards; returns their glob.
  std::string write_shards(int64_t count, int64_t shards) const {
    SyntheticShardsOptions o;
    o.count = count;
    o.height = o.width = 8;
    o.shards = shards;
    write_synthetic_shards(path("shards"), o);
    return path("shards") + "/*.tfrecord";
  }
};

std::vector<Batch> epoch_of(Loader& loader, int64_t epoch, int64_t first_batch = 0, const std::string& position = {}) {
  loader.set_epoch(epoch, first_batch, position);
  std::vector<Batch> batches;
  for (int64_t b = first_batch; b < loader.num_batches(); ++b) batches.push_back(loader.next());
  return batches;
}

void expect_same(const std::vector<Batch>& a, const std::vector<Batch>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(at::equal(a[i].inputs, b[i].inputs)) << "batch " << i;
    EXPECT_TRUE(at::equal(a[i].targets, b[i].targets)) << "batch " << i;
  }
}

/// Each example's pixel sum and label, sorted: the multiset of examples an epoch handed out.
std::vector<std::pair<double, int64_t>> examples_of(const std::vector<Batch>& batches) {
  std::vector<std::pair<double, int64_t>> out;
  for (const Batch& b : batches) {
    for (int64_t i = 0; i < b.size(); ++i) out.emplace_back(b.inputs[i].sum().item<double>(), b.targets[i].item<int64_t>());
  }
  std::sort(out.begin(), out.end());
  return out;
}

LoaderOptions loader_options(int64_t workers) {
  LoaderOptions o;
  o.batch_size = 16;
  o.workers = workers;
  o.prefetch = 4;
  return o;
}

}  // namespace

TEST_F(StreamDatasetTest, BatchesAreTheSameForAnyWorkersAndAnEpochHoldsEveryRecordOnce) {
  const std::string glob = write_shards(100, 3);
  StreamDatasetOptions shuffled;
  shuffled.shuffle_buffer = 20;
  shuffled.seed = 5;
  auto data = std::make_shared<StreamDataset>(glob, shuffled);
  EXPECT_EQ(data->size(), 100);
  EXPECT_EQ(data->example_shape(), (std::vector<int64_t>{3, 8, 8}));
  Loader inline_loader(data, loader_options(0)), three_workers(data, loader_options(3));
  const std::vector<Batch> epoch1 = epoch_of(inline_loader, 1);
  ASSERT_EQ(epoch1.size(), 7u);
  EXPECT_EQ(epoch1.back().size(), 4);
  expect_same(epoch1, epoch_of(three_workers, 1));
  // another epoch, another order, the same examples; in file order (no buffer) the same examples too
  const std::vector<Batch> epoch2 = epoch_of(three_workers, 2);
  EXPECT_FALSE(at::equal(epoch1[0].targets, epoch2[0].targets) && at::equal(epoch1[1].targets, epoch2[1].targets));
  EXPECT_EQ(examples_of(epoch1), examples_of(epoch2));
  Loader in_order(std::make_shared<StreamDataset>(glob, StreamDatasetOptions{}), loader_options(2));
  EXPECT_EQ(examples_of(epoch_of(in_order, 0)), examples_of(epoch1));
}

TEST_F(StreamDatasetTest, ALoaderSetToARecordedPositionOrReadingAgainContinuesTheEpochExactly) {
  StreamDatasetOptions o;
  o.shuffle_buffer = 30;
  o.seed = 9;
  auto data = std::make_shared<StreamDataset>(write_shards(120, 4), o);
  Loader whole(data, loader_options(2));
  whole.set_epoch(3);
  std::vector<Batch> before;
  for (int b = 0; b < 3; ++b) before.push_back(whole.next());
  const std::string position = whole.stream_position();
  EXPECT_EQ(position.rfind("fitscope-shard-stream-position ", 0), 0u) << position;
  std::vector<Batch> rest;
  for (int64_t b = 3; b < whole.num_batches(); ++b) rest.push_back(whole.next());

  Loader restored(data, loader_options(3));
  expect_same(epoch_of(restored, 3, 3, position), rest);
  Loader read_again(data, loader_options(0));
  expect_same(epoch_of(read_again, 3, 3), rest);
  // a position of another epoch is refused, naming both
  Loader other(data, loader_options(1));
  const std::string message = error_of([&] { other.set_epoch(4, 3, position); });
  EXPECT_NE(message.find("a stream position of epoch 3 to resume epoch 4"), std::string::npos) << message;
}

TEST_F(StreamDatasetTest, RanksReadTheirOwnShardsAndFewerShardsThanRanksIsRefused) {
  const std::string glob = write_shards(103, 4);  // 25, 26, 26, 26 records
  int64_t records = 0;
  for (int64_t rank = 0; rank < 2; ++rank) {
    StreamDatasetOptions o;
    o.rank = rank;
    o.world_size = 2;
    const StreamDataset data(glob, o);
    EXPECT_EQ(data.shard_indices(), (std::vector<int64_t>{rank, rank + 2}));
    records += data.records();
    // a copy limited to the fewest records reads that many, in as many batches on each rank
    Loader loader(data.limited_to(51), loader_options(1));
    EXPECT_EQ(loader.num_batches(), 4);
    EXPECT_EQ(examples_of(epoch_of(loader, 0)).size(), 51u);
  }
  EXPECT_EQ(records, 103);
  StreamDatasetOptions three;
  three.world_size = 5;
  const std::string message = error_of([&] { StreamDataset(glob, three); });
  EXPECT_NE(message.find("4 shards for 5 ranks: each rank needs at least one shard"), std::string::npos) << message;
}

TEST_F(StreamDatasetTest, BadRecordsAreNamedByFileOffsetAndFeatureOrSkippedAndCounted) {
  write_shards(3, 1);
  // the three good records, then: one without its label, one whose data CRC is wrong, the first again
  std::vector<std::string> good;
  ShardReader reader(path("shards/train-00000-of-00001.tfrecord"));
  for (ShardRecord r; reader.next(r);) good.push_back(r.bytes);
  ASSERT_EQ(good.size(), 3u);
  ExampleFeatures unlabeled = parse_example(good[1], "test", 0);
  unlabeled.features.erase("image/class/label");
  std::ostringstream file;
  for (const std::string& r : good) write_tfrecord(file, r);
  const auto missing_at = static_cast<int64_t>(file.str().size());
  write_tfrecord(file, serialize_example(unlabeled));
  const auto bad_crc_at = static_cast<int64_t>(file.str().size());
  write_tfrecord(file, good[2]);
  write_tfrecord(file, good[0]);
  std::string bytes = file.str();
  bytes[static_cast<std::size_t>(bad_crc_at) + 12 + 5] ^= 0x40;  // a byte of the record's data
  write("bad.tfrecord", bytes);

  const std::string message = error_of([&] { StreamDataset(path("bad.tfrecord"), StreamDatasetOptions{}); });
  EXPECT_NE(message.find(path("bad.tfrecord") + ": the record at byte offset " + std::to_string(missing_at) +
                         " has no feature image/class/label"), std::string::npos) << message;

  StreamDatasetOptions skip;
  skip.skip_bad_records = true;
  auto data = std::make_shared<StreamDataset>(path("bad.tfrecord"), skip);
  EXPECT_EQ(data->records(), 4);
  EXPECT_EQ(data->skipped_count(), 2);
  ASSERT_EQ(data->skipped().size(), 2u);
  EXPECT_NE(data->skipped()[0].find("byte offset " + std::to_string(missing_at)), std::string::npos) << data->skipped()[0];
  EXPECT_NE(data->skipped()[1].find("byte offset " + std::to_string(bad_crc_at)), std::string::npos) << data->skipped()[1];
  Loader loader(data, loader_options(2));
  const std::vector<Batch> epoch = epoch_of(loader, 0);
  ASSERT_EQ(epoch.size(), 1u);
  EXPECT_EQ(epoch[0].size(), 4);
}

TEST_F(StreamDatasetTest, AFeatureVectorOfAnotherLengthIsNamedByTheCountOrSkipped) {
  std::ostringstream file;
  int64_t short_at = 0;
  for (const std::size_t length : {4, 4, 3, 4}) {
    if (length == 3) short_at = static_cast<int64_t>(file.str().size());
    ExampleFeatures e;
    e.features["x"] = std::vector<float>(length, 1.0f);
    e.features["y"] = std::vector<int64_t>{1};
    write_tfrecord(file, serialize_example(e));
  }
  write("vectors.tfrecord", file.str());
  StreamDatasetOptions options;
  options.decoder.features = RecordFeatures::parse("x,y");
  const std::string message = error_of([&] { StreamDataset(path("vectors.tfrecord"), options); });
  EXPECT_NE(message.find(path("vectors.tfrecord") + ": the record at byte offset " + std::to_string(short_at) +
                         " gives an input of shape [3], the stream's first [4]"), std::string::npos) << message;
  options.skip_bad_records = true;
  auto data = std::make_shared<StreamDataset>(path("vectors.tfrecord"), options);
  EXPECT_EQ(data->records(), 3);
  Loader loader(data, loader_options(1));
  EXPECT_EQ(epoch_of(loader, 0).at(0).inputs.sizes(), (std::vector<int64_t>{3, 4}));
}

TEST_F(StreamDatasetTest, ARecordWhosePixelsDoNotDecodeIsLeftOutOfItsBatchAndCountedOnceOverEpochs) {
  SyntheticShardsOptions o;
  o.count = 3;
  o.height = o.width = 8;
  o.write.format = "png";
  write_synthetic_shards(path("png"), o);
  std::vector<std::string> good;
  ShardReader reader(path("png/train-00000-of-00001.tfrecord"));
  for (ShardRecord r; reader.next(r);) good.push_back(r.bytes);
  ASSERT_EQ(good.size(), 3u);
  // the PNG's header reads (the count passes it), a byte of its pixel data is wrong (decoding fails)
  ExampleFeatures broken = parse_example(good[1], "test", 0);
  std::string& png = std::get<std::vector<std::string>>(broken.features.at("image/encoded")).front();
  png[png.size() / 2] ^= 0x5A;
  std::ostringstream file;
  write_tfrecord(file, good[0]);
  const auto broken_at = static_cast<int64_t>(file.str().size());
  write_tfrecord(file, serialize_example(broken));
  write_tfrecord(file, good[2]);
  write("broken.tfrecord", file.str());

  auto strict = std::make_shared<StreamDataset>(path("broken.tfrecord"), StreamDatasetOptions{});
  EXPECT_EQ(strict->records(), 3);
  Loader stops(strict, loader_options(1));
  const std::string message = error_of([&] { epoch_of(stops, 0); });
  EXPECT_NE(message.find(path("broken.tfrecord") + ": the record at byte offset " + std::to_string(broken_at)), std::string::npos)
      << message;

  StreamDatasetOptions skip;
  skip.skip_bad_records = true;
  auto data = std::make_shared<StreamDataset>(path("broken.tfrecord"), skip);
  EXPECT_EQ(data->skipped_count(), 0) << "the count reads no pixels";
  Loader loader(data, loader_options(2));
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    const std::vector<Batch> batches = epoch_of(loader, epoch);
    ASSERT_EQ(batches.size(), 1u);
    EXPECT_EQ(batches[0].size(), 2) << "epoch " << epoch;
    EXPECT_EQ(data->skipped_count(), 1) << "epoch " << epoch;
  }
  ASSERT_EQ(data->skipped().size(), 1u);
  EXPECT_NE(data->skipped()[0].find("byte offset " + std::to_string(broken_at)), std::string::npos) << data->skipped()[0];
  // a copy for even ranks shares the count
  EXPECT_EQ(data->limited_to(2)->skipped_count(), 1);
  // a batch of nothing but bad records says so
  auto alone = std::make_shared<StreamDataset>(path("broken.tfrecord"), skip);
  LoaderOptions one = loader_options(0);
  one.batch_size = 1;
  Loader single(alone, one);
  single.set_epoch(0);
  single.next();
  EXPECT_NE(error_of([&] { single.next(); }).find("none of the 1 records of batch 1 decodes"), std::string::npos);
}

TEST_F(StreamDatasetTest, AStreamHasNoExampleByIndexAndTheLoaderRefusesACacheForIt) {
  auto data = std::make_shared<StreamDataset>(write_shards(20, 1), StreamDatasetOptions{});
  EXPECT_NE(error_of([&] { data->get(0); }).find("is a stream, read in order by a Loader"), std::string::npos);
  LoaderOptions cached = loader_options(1);
  cached.cache = true;
  const std::string message = error_of([&] { Loader(data, cached); });
  EXPECT_NE(message.find("LoaderOptions::cache: tfrecord:" + path("shards") + "/*.tfrecord is a stream"), std::string::npos) << message;
}

TEST_F(StreamDatasetTest, ImagesOfOtherSizesInOneBatchAreNamedByTheirRecord) {
  for (const auto& [dir, side] : {std::pair{"a", int64_t{8}}, std::pair{"b", int64_t{16}}}) {
    SyntheticShardsOptions o;
    o.count = 2;
    o.height = o.width = side;
    write_synthetic_shards(path(dir), o);
  }
  // found by the count, before training, from the headers
  const std::string message = error_of([&] { StreamDataset(path("*") + "/*.tfrecord", StreamDatasetOptions{}); });
  EXPECT_NE(message.find(path("b") + "/train-00000-of-00001.tfrecord: the record at byte offset 0 gives an input of shape "
                         "[3, 16, 16], the stream's first [3, 8, 8]"), std::string::npos) << message;
  StreamDatasetOptions skip;
  skip.skip_bad_records = true;
  const StreamDataset skipped(path("*") + "/*.tfrecord", skip);
  EXPECT_EQ(skipped.records(), 2);
  EXPECT_EQ(skipped.skipped_count(), 2);
  // with a size to resize to, they batch
  StreamDatasetOptions resized;
  resized.decoder.height = resized.decoder.width = 12;
  Loader same(std::make_shared<StreamDataset>(path("*") + "/*.tfrecord", resized), loader_options(0));
  same.set_epoch(0);
  EXPECT_EQ(same.next().inputs.sizes(), (std::vector<int64_t>{4, 3, 12, 12}));
}
