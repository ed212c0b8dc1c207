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

namespace {

/// What the `world` ranks of a stream drew in `epoch`, interleaved (each rank's first record by rank,
/// then each one's second, ...), each record with its decoded example.
struct DrawnPass {
  std::vector<RecordAt> records;
  std::vector<Example> examples;
};
DrawnPass drawn(const std::string& glob, StreamDatasetOptions o, int64_t world, int64_t epoch, int64_t per_rank) {
  DrawnPass pass;
  pass.records.resize(static_cast<std::size_t>(per_rank * world));
  pass.examples.resize(pass.records.size());
  o.world_size = world;
  for (o.rank = 0; o.rank < world; ++o.rank) {
    const StreamDataset data(glob, o);
    ShardStream stream = data.open_stream();
    stream.set_epoch(epoch);
    ShardRecord record;
    for (int64_t j = 0; j < per_rank; ++j) {
      EXPECT_TRUE(data.next_record(stream, record));
      const auto at = static_cast<std::size_t>(j * world + o.rank);
      pass.records[at] = {record.shard, record.offset};
      pass.examples[at] = data.decode(record);
    }
  }
  return pass;
}

}  // namespace

TEST_F(StreamDatasetTest, APassResumedOnAnotherNumberOfRanksReadsTheRecordsItsRanksLeftSplitAnew) {
  const std::string glob = write_shards(96, 8);  // 12 records a shard
  StreamDatasetOptions o;
  o.shuffle_buffer = 10;
  o.seed = 3;
  // 4 ranks drew 24 records each in pass 2; the job took the first 22 of their interleaved order
  const DrawnPass pass = drawn(glob, o, 4, 2, 24);
  const int64_t done = 22, rest = 96 - done;
  std::vector<std::vector<RecordAt>> shares;
  o.world_size = 3;
  for (o.rank = 0; o.rank < 3; ++o.rank) {
    const StreamDataset data(glob, o);
    shares.push_back(data.rest_of_pass(2, 4, done));
    // split as DistributedSampler splits: places rank, rank + 3, ... of the rest, the short share padded
    ASSERT_EQ(shares.back().size(), 25u) << "rank " << o.rank;
    for (int64_t k = 0; k < 25; ++k) {
      EXPECT_EQ(shares.back()[static_cast<std::size_t>(k)], pass.records[static_cast<std::size_t>(done + (o.rank + 3 * k) % rest)])
          << "rank " << o.rank << ", record " << k;
    }
    // a loader continuing the pass from its batch 0 hands out those records' examples, in that order
    Loader loader(data.limited_to(24), loader_options(2));
    loader.continue_stream_epoch(2, 0, std::vector<RecordAt>(shares.back().begin(), shares.back().begin() + 24));
    int64_t k = 0;
    for (int64_t b = 0; b < loader.num_batches(); ++b) {
      const Batch batch = loader.next();
      for (int64_t i = 0; i < batch.size(); ++i, ++k) {
        const Example& expected = pass.examples[static_cast<std::size_t>(done + (o.rank + 3 * k) % rest)];
        EXPECT_TRUE(at::equal(batch.inputs[i], expected.data)) << "rank " << o.rank << ", record " << k;
        EXPECT_EQ(batch.targets[i].item<int64_t>(), expected.target.item<int64_t>());
      }
    }
    EXPECT_EQ(k, 24);
    EXPECT_EQ(loader.stream_position(), "");  // a listed rest has no stream position: backups count examples
  }
  // taken and split anew, every record of the pass once (but for the pad)
  std::vector<RecordAt> all(pass.records.begin(), pass.records.begin() + done);
  for (const auto& share : shares) all.insert(all.end(), share.begin(), share.end());
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  std::vector<RecordAt> expected = pass.records;
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(all, expected);
  // the 3 ranks took 4 records each; 2 ranks split what is left of the same order again
  std::vector<RecordAt> left, again;
  for (int64_t r = 0; r < 3; ++r) {
    for (int64_t k = 4; r + 3 * k < rest; ++k) left.push_back(shares[static_cast<std::size_t>(r)][static_cast<std::size_t>(k)]);
  }
  o.world_size = 2;
  for (o.rank = 0; o.rank < 2; ++o.rank) {
    const auto share = StreamDataset(glob, o).rest_of_pass(2, 4, done + 12);
    EXPECT_EQ(share.size(), 31u);
    again.insert(again.end(), share.begin(), share.end());
  }
  std::sort(left.begin(), left.end());
  left.erase(std::unique(left.begin(), left.end()), left.end());
  std::sort(again.begin(), again.end());
  again.erase(std::unique(again.begin(), again.end()), again.end());
  EXPECT_EQ(again, left);
  // what a pass of 4 ranks cannot have done is refused, naming the counts
  o.rank = 0;
  const std::string message = error_of([&] { StreamDataset(glob, o).rest_of_pass(2, 4, 97); });
  EXPECT_NE(message.find("97 records of pass 2 done, which 4 ranks' streams of 24 records each make (expected 0 to 96)"),
            std::string::npos) << message;
}

TEST_F(StreamDatasetTest, AListedRecordThatNoLongerStartsWhereItDidIsNamedByItsFileAndOffset) {
  const std::string glob = write_shards(12, 1);
  const StreamDataset data(glob, {});
  ListedRecords listed = data.open_listed({{0, 3}});
  ShardRecord record;
  const std::string message = error_of([&] { listed.next(record); });
  EXPECT_NE(message.find(data.all_shards()[0]), std::string::npos) << message;
  EXPECT_NE(message.find("offset 3"), std::string::npos) << message;
  // examples by index are not a stream's rest, nor records another data set's
  Loader loader(std::make_shared<StreamDataset>(data), loader_options(0));
  EXPECT_NE(error_of([&] { loader.continue_epoch(0, 0, std::vector<int64_t>{0}); }).find("whose rest is records"), std::string::npos);
}
