#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "fitscope/data/streams/shard_stream.hpp"
#include "fitscope/data/formats/tar_format.hpp"
#include "fitscope/data/formats/tfrecord_format.hpp"
#include "../data_files_test.hpp"

using namespace fitscope;

namespace {

/// A record as the tests compare them: where it came from and every byte of it.
std::string describe(const ShardRecord& record) {
  std::string text = std::to_string(record.shard) + "@" + std::to_string(record.offset) + " " + record.bytes;
  if (!record.key.empty() || !record.parts.empty()) text += " key=" + record.key;
  for (const auto& [extension, bytes] : record.parts) text += " " + extension + "=" + bytes;
  return text;
}

/// What the rest of the epoch hands out.
std::vector<std::string> drain(ShardStream& stream) {
  std::vector<std::string> out;
  ShardRecord record;
  while (stream.next(record)) out.push_back(describe(record));
  return out;
}

std::vector<std::string> take(ShardStream& stream, std::size_t count) {
  std::vector<std::string> out;
  ShardRecord record;
  while (out.size() < count && stream.next(record)) out.push_back(describe(record));
  return out;
}

template <typename T>
std::vector<T> sorted(std::vector<T> v) {
  std::sort(v.begin(), v.end());
  return v;
}

std::vector<std::string> tail(const std::vector<std::string>& v, std::size_t from) {
  return {v.begin() + static_cast<std::ptrdiff_t>(from), v.end()};
}

using Sample = std::pair<std::string, std::map<std::string, std::string>>;  // key, extension -> bytes

std::string tar_of(const std::vector<Sample>& samples) {
  std::ostringstream out;
  for (const auto& [key, parts] : samples) {
    for (const auto& [extension, bytes] : parts) write_tar_member(out, key + "." + extension, bytes);
  }
  finish_tar(out);
  return out.str();
}

class ShardStreamTest : public DataFilesTest {
 protected:
  /// The records of shard `shard`: "s<shard>-r<i>" with a little padding of varying length, so
  /// offsets are uneven.
  static std::vector<std::string> records_of(int shard, int count) {
    std::vector<std::string> records;
    for (int i = 0; i < count; ++i) {
      const std::string padding(static_cast<std::size_t>(i % 7), '.');
      records.push_back("s" + std::to_string(shard) + "-r" + std::to_string(i) + padding);
    }
    return records;
  }
  /// `shards` TFRecord shards of `per_shard` records each; every `gzip_every`-th one gzip-compressed.
  std::vector<std::string> write_tfrecord_shards(int shards, int per_shard, int gzip_every = 0) const {
    std::vector<std::string> paths;
    for (int s = 0; s < shards; ++s) {
      const std::string name = "part-" + std::to_string(s) + ".tfrecord";
      const std::string bytes = framed(records_of(s, per_shard + s));  // uneven shard sizes
      if (gzip_every > 0 && s % gzip_every == gzip_every - 1) {
        write_gz(name, bytes);
      } else {
        write(name, bytes);
      }
      paths.push_back(path(name));
    }
    return paths;
  }
  std::vector<std::string> write_tar_shards(int shards, int per_shard) const {
    std::vector<std::string> paths;
    for (int s = 0; s < shards; ++s) {
      std::vector<Sample> samples;
      for (int i = 0; i < per_shard; ++i) {
        const std::string key = "shard" + std::to_string(s) + "/" + std::to_string(1000 + i);
        samples.push_back({key, {{"jpg", "image " + key}, {"cls", std::to_string(i % 10)}}});
      }
      const std::string name = "part-" + std::to_string(s) + ".tar";
      write(name, tar_of(samples));
      paths.push_back(path(name));
    }
    return paths;
  }
  /// Every record of `shards` in file order, shard after shard.
  static std::vector<std::string> in_file_order(const std::vector<std::string>& shards,
                                                const ShardReaderOptions& options, const std::vector<int64_t>& order) {
    std::vector<std::string> out;
    for (const int64_t s : order) {
      ShardReader reader(shards[static_cast<std::size_t>(s)], options, s);
      ShardRecord record;
      while (reader.next(record)) out.push_back(describe(record));
    }
    return out;
  }
  static std::vector<int64_t> identity(std::size_t n) {
    std::vector<int64_t> order(n);
    for (std::size_t i = 0; i < n; ++i) order[i] = static_cast<int64_t>(i);
    return order;
  }
};

ShardStreamOptions shuffled(int64_t buffer, uint64_t seed = 7, ShardFormat format = ShardFormat::kTfRecord) {
  ShardStreamOptions options;
  options.reader.format = format;
  options.seed = seed;
  options.shuffle_buffer = buffer;
  return options;
}

}  // namespace

TEST_F(ShardStreamTest, ListShardsSortsTheMatchesLeavesOutDirectoriesAndNamesAPatternThatMatchesNothing) {
  for (const char* name : {"train-0002.tfrecord", "train-0000.tfrecord", "train-0001.tfrecord", "other.tfrecord"}) {
    write(name, "");
  }
  std::filesystem::create_directories(path("train-dir.tfrecord"));
  EXPECT_EQ(list_shards(path("train-*.tfrecord")), (std::vector<std::string>{path("train-0000.tfrecord"),
                                                                            path("train-0001.tfrecord"),
                                                                            path("train-0002.tfrecord")}));
  EXPECT_EQ(list_shards(path("other.tfrecord")), std::vector<std::string>{path("other.tfrecord")});
  const std::string error = error_of([&] { list_shards(path("valid-*.tfrecord")); });
  EXPECT_NE(error.find("no shard file matches '" + path("valid-*.tfrecord") + "'"), std::string::npos) << error;
  EXPECT_NE(error_of([&] { list_shards(path("train-dir.*")); }).find("train-dir.*"), std::string::npos)
      << "a directory is not a shard";
  // a FIFO would block the first open() forever
  ASSERT_EQ(::mkfifo(path("train-0003.tfrecord").c_str(), 0600), 0);
  EXPECT_EQ(error_of([&] { list_shards(path("train-*.tfrecord")); }),
            "shard " + path("train-0003.tfrecord") + " (matched by '" + path("train-*.tfrecord") +
                "') is a FIFO, not a regular file (a shard is read from its start at every epoch)");
}

TEST_F(ShardStreamTest, AssignShardsGivesEachRankEveryWorldSizethShardAndRefusesFewerShardsThanRanks) {
  const std::vector<std::string> four{"a", "b", "c", "d"};
  EXPECT_EQ(assign_shards(four, 0, 2), (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(assign_shards(four, 1, 2), (std::vector<std::string>{"b", "d"}));
  EXPECT_EQ(assign_shards(four, 2, 3), (std::vector<std::string>{"c"}));
  EXPECT_EQ(assign_shards(four, 0, 1), four);
  EXPECT_EQ(error_of([] { assign_shards({"a"}, 0, 2); }),
            "1 shard for 2 ranks: each rank needs at least one shard (write more shards, or run fewer ranks)");
  EXPECT_NE(error_of([&] { assign_shards(four, 3, 3); }).find("rank 3 outside a world of 3"), std::string::npos);
  EXPECT_NE(error_of([&] { assign_shards(four, 0, 0); }).find("world size must be >= 1, got 0"), std::string::npos);
}

TEST_F(ShardStreamTest, WithoutShuffleEveryEpochReadsTheShardsInOrderAndEachRecordOnce) {
  const std::vector<std::string> shards = write_tfrecord_shards(3, 4, /*gzip_every=*/2);
  ShardStream stream(shards, shuffled(0));
  const std::vector<std::string> expected = in_file_order(shards, {}, identity(3));
  ASSERT_EQ(expected.size(), 4u + 5u + 6u);
  EXPECT_EQ(expected.front(), "0@0 s0-r0");
  EXPECT_EQ(drain(stream), expected);
  ShardRecord record;
  EXPECT_FALSE(stream.next(record)) << "the epoch stays ended until set_epoch";
  stream.set_epoch(1);
  EXPECT_EQ(stream.shard_order(), identity(3));
  EXPECT_EQ(drain(stream), expected);
  EXPECT_EQ(stream.buffered(), 0);
}

TEST_F(ShardStreamTest, ARecordIsOneTfRecordRecordOrOneTarSampleWithItsShardAndOffset) {
  write("one.tfrecord", framed({"alpha", "beta"}));
  ShardReader tfrecord(path("one.tfrecord"), {}, 5);
  ShardRecord record;
  ASSERT_TRUE(tfrecord.next(record));
  ASSERT_TRUE(tfrecord.next(record));
  EXPECT_EQ(record.bytes, "beta");
  EXPECT_EQ(record.shard, 5);
  EXPECT_EQ(record.offset, 16 + 5);
  EXPECT_TRUE(record.key.empty() && record.parts.empty());
  EXPECT_FALSE(tfrecord.next(record));

  write("one.tar", tar_of({{"a/1", {{"jpg", "J1"}, {"cls", "3"}}}, {"a/2", {{"jpg", "J2"}, {"cls", "4"}}}}));
  ShardReaderOptions options;
  options.format = ShardFormat::kTar;
  options.required_parts = {"jpg|png", "cls"};
  ShardReader tar(path("one.tar"), options);
  ASSERT_TRUE(tar.next(record));
  EXPECT_EQ(record.key, "a/1");
  EXPECT_EQ(record.parts, (std::map<std::string, std::string>{{"cls", "3"}, {"jpg", "J1"}}));
  EXPECT_TRUE(record.bytes.empty());
  EXPECT_EQ(record.offset, 0);
  const int64_t second = tar.position();
  ASSERT_TRUE(tar.next(record));
  EXPECT_EQ(record.offset, second);
  tar.seek(0);
  ASSERT_TRUE(tar.next(record));
  EXPECT_EQ(record.key, "a/1") << "seek reads a record again";

  ShardReader not_tar(path("one.tfrecord"), options);
  const std::string error = error_of([&] { not_tar.next(record); });
  EXPECT_NE(error.find(path("one.tfrecord") + ": the header at byte offset 0"), std::string::npos)
      << "a TFRecord file is not a tar archive: " << error;
  ShardReaderOptions tfrecord_with_parts;
  tfrecord_with_parts.required_parts = {"jpg"};
  EXPECT_NE(error_of([&] { ShardReader(path("one.tfrecord"), tfrecord_with_parts); }).find("required_parts"),
            std::string::npos);
}

TEST_F(ShardStreamTest, AShuffleBufferOfOneIsNoShuffle) {
  const std::vector<std::string> shards = write_tfrecord_shards(4, 5);
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    ShardStream none(shards, shuffled(0));
    ShardStream one(shards, shuffled(1));
    none.set_epoch(epoch);
    one.set_epoch(epoch);
    EXPECT_EQ(drain(one), drain(none)) << "epoch " << epoch;
  }
}

TEST_F(ShardStreamTest, AShuffledEpochIsAPermutationOfTheRecordsThatDependsOnSeedAndEpochOnly) {
  const std::vector<std::string> shards = write_tfrecord_shards(6, 10, /*gzip_every=*/3);
  const std::vector<std::string> all = sorted(in_file_order(shards, {}, identity(6)));
  ShardStream stream(shards, shuffled(16, /*seed=*/42));
  std::vector<std::vector<std::string>> epochs;
  std::vector<std::vector<int64_t>> orders;
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    stream.set_epoch(epoch);
    orders.push_back(stream.shard_order());
    EXPECT_EQ(sorted(orders.back()), identity(6)) << "every shard once";
    epochs.push_back(drain(stream));
    EXPECT_EQ(sorted(epochs.back()), all) << "every record exactly once in epoch " << epoch;
    EXPECT_NE(epochs.back(), in_file_order(shards, {}, orders.back())) << "records shuffled across the buffer";
  }
  EXPECT_NE(orders[0], orders[1]);
  EXPECT_NE(orders[1], orders[2]);
  EXPECT_NE(epochs[0], epochs[1]);

  ShardStream same(shards, shuffled(16, /*seed=*/42));
  same.set_epoch(1);
  EXPECT_EQ(same.shard_order(), orders[1]);
  EXPECT_EQ(drain(same), epochs[1]) << "the same seed and epoch give the same stream";
  ShardStream other(shards, shuffled(16, /*seed=*/43));
  other.set_epoch(1);
  EXPECT_NE(drain(other), epochs[1]);
}

TEST_F(ShardStreamTest, TheShuffleBufferHoldsAtMostItsSizeAndEachDrawComesFromTheRecordsReadSoFar) {
  const std::vector<std::string> shards = write_tfrecord_shards(3, 20);
  constexpr int64_t kBuffer = 8;
  ShardStream stream(shards, shuffled(kBuffer));
  stream.set_epoch(2);
  const std::vector<std::string> input = in_file_order(shards, {}, stream.shard_order());
  std::map<std::string, std::size_t> input_index;
  for (std::size_t i = 0; i < input.size(); ++i) input_index[input[i]] = i;
  ShardRecord record;
  int64_t most_buffered = 0;
  std::size_t draws = 0;
  bool some_draw_was_not_the_oldest = false;
  while (stream.next(record)) {
    most_buffered = std::max(most_buffered, stream.buffered());
    EXPECT_LE(stream.buffered(), kBuffer);
    // the k-th draw chooses among the first kBuffer + k records read: the buffer bounds how far a
    // record moves forward
    const std::size_t index = input_index.at(describe(record));
    EXPECT_LT(index, static_cast<std::size_t>(kBuffer) + draws) << "draw " << draws;
    some_draw_was_not_the_oldest = some_draw_was_not_the_oldest || index != draws;
    ++draws;
  }
  EXPECT_EQ(draws, input.size());
  EXPECT_EQ(most_buffered, kBuffer - 1) << "full before each draw, one less after it";
  EXPECT_TRUE(some_draw_was_not_the_oldest);
  EXPECT_EQ(stream.buffered(), 0);
}

TEST_F(ShardStreamTest, TheShuffleBufferStopsFillingAtItsByteBudgetAndARestoreFillsItAlike) {
  std::vector<std::string> records;
  for (int i = 0; i < 40; ++i) records.push_back(std::string(static_cast<std::size_t>(100 + 37 * (i % 5)), static_cast<char>('a' + i % 26)));
  write("big.tfrecord", framed(records));
  ShardStreamOptions options = shuffled(1000);
  options.shuffle_buffer_bytes = 500;
  ShardStream stream({path("big.tfrecord")}, options);
  ShardRecord record;
  std::vector<std::string> first_half;
  for (int draw = 0; draw < 20; ++draw) {
    ASSERT_TRUE(stream.next(record));
    first_half.push_back(describe(record));
    EXPECT_LE(stream.buffered(), 4) << "records of 100 to 248 bytes: at most 4 under 500 bytes, then one more, one drawn";
  }
  const StreamPosition position = stream.position();
  const std::vector<std::string> rest = drain(stream);
  EXPECT_EQ(first_half.size() + rest.size(), records.size());
  ShardStream again({path("big.tfrecord")}, options);
  again.restore(position);
  EXPECT_EQ(drain(again), rest);
  // one record over the budget still streams, one at a time
  options.shuffle_buffer_bytes = 1;
  ShardStream tight({path("big.tfrecord")}, options);
  EXPECT_EQ(drain(tight).size(), records.size());
}

TEST_F(ShardStreamTest, TarShardsStreamTheirSamplesShuffled) {
  const std::vector<std::string> shards = write_tar_shards(3, 9);
  ShardStreamOptions options = shuffled(5, 3, ShardFormat::kTar);
  options.reader.required_parts = {"jpg", "cls"};
  ShardStream stream(shards, options);
  const std::vector<std::string> epoch = drain(stream);
  EXPECT_EQ(epoch.size(), 27u);
  EXPECT_EQ(sorted(epoch), sorted(in_file_order(shards, options.reader, identity(3))));
  EXPECT_NE(epoch, in_file_order(shards, options.reader, stream.shard_order()));
}

TEST_F(ShardStreamTest, RestoreReproducesTheRestOfTheEpochByteForByteFromAnyPoint) {
  // gzip shards too (their offsets count uncompressed bytes, and seeking one inflates it again)
  const std::vector<std::string> shards = write_tfrecord_shards(4, 6, /*gzip_every=*/2);
  constexpr int64_t kBuffer = 10;
  const auto stream_order_is_gzip = [](const ShardStream& stream, const StreamPosition& position) {
    return stream.shard_order()[static_cast<std::size_t>(position.shard_index)] % 2 == 1;  // gzip_every 2
  };
  int inside_a_gzip_shard = 0;
  for (const int64_t epoch : {0, 3}) {
    ShardStream uninterrupted(shards, shuffled(kBuffer));
    uninterrupted.set_epoch(epoch);
    const std::vector<std::string> expected = drain(uninterrupted);
    ASSERT_EQ(expected.size(), 6u + 7u + 8u + 9u);
    // before the first record, inside the first fill, mid-stream, in a gzip shard, during the drain, at the end
    for (const std::size_t draws : {std::size_t{0}, std::size_t{1}, std::size_t{4}, std::size_t{9}, std::size_t{14},
                                    std::size_t{17}, expected.size() - 6, expected.size() - 1, expected.size()}) {
      ShardStream first(shards, shuffled(kBuffer));
      first.set_epoch(epoch);
      ASSERT_EQ(take(first, draws), std::vector<std::string>(expected.begin(),
                                                             expected.begin() + static_cast<std::ptrdiff_t>(draws)));
      const StreamPosition position = first.position();
      EXPECT_EQ(position.draws, static_cast<int64_t>(draws));
      EXPECT_EQ(static_cast<int64_t>(position.buffer.size()), first.buffered());
      if (draws + kBuffer > expected.size() && draws > 0) {
        EXPECT_EQ(position.shard_index, 4) << "draining: every shard read";
      }
      const std::string saved = position.encode();
      if (position.shard_index < 4 && position.shard_position > 0 && stream_order_is_gzip(first, position)) {
        ++inside_a_gzip_shard;
      }

      ShardStream resumed(shards, shuffled(kBuffer));  // a new process: only the text survives
      resumed.restore(StreamPosition::decode(saved));
      EXPECT_EQ(resumed.epoch(), epoch);
      EXPECT_EQ(resumed.buffered(), first.buffered());
      EXPECT_EQ(drain(resumed), tail(expected, draws)) << "restored after " << draws << " draws: " << saved;
      EXPECT_EQ(drain(first), tail(expected, draws)) << "taking a position changes nothing";

      // the same stream, back to where it was after reading on
      first.restore(position);
      EXPECT_EQ(drain(first), tail(expected, draws));
      // and the epochs after a restored one are the uninterrupted stream's
      resumed.set_epoch(epoch + 1);
      uninterrupted.set_epoch(epoch + 1);
      EXPECT_EQ(take(resumed, 5), take(uninterrupted, 5));
    }
  }
  EXPECT_GT(inside_a_gzip_shard, 0) << "some position stands in the middle of a gzip shard";
}

TEST_F(ShardStreamTest, RestoreWorksWithoutShuffleAndOnTarShards) {
  const std::vector<std::string> tfrecords = write_tfrecord_shards(2, 5, /*gzip_every=*/2);
  ShardStream plain(tfrecords, shuffled(0));
  const std::vector<std::string> expected = drain(plain);
  for (std::size_t draws = 0; draws <= expected.size(); ++draws) {
    plain.set_epoch(0);
    take(plain, draws);
    ShardStream resumed(tfrecords, shuffled(0));
    resumed.restore(StreamPosition::decode(plain.position().encode()));
    EXPECT_EQ(drain(resumed), tail(expected, draws)) << draws;
  }

  const std::vector<std::string> tars = write_tar_shards(3, 7);
  ShardStreamOptions options = shuffled(6, 11, ShardFormat::kTar);
  ShardStream tar(tars, options);
  tar.set_epoch(1);
  const std::vector<std::string> samples = drain(tar);
  for (const std::size_t draws : {std::size_t{0}, std::size_t{3}, std::size_t{10}, std::size_t{18}}) {
    tar.set_epoch(1);
    take(tar, draws);
    ShardStream resumed(tars, options);
    resumed.restore(StreamPosition::decode(tar.position().encode()));
    EXPECT_EQ(drain(resumed), tail(samples, draws)) << draws;
  }
}

TEST_F(ShardStreamTest, APositionEncodesAsOneLineAndDecodingGarbageSaysWhatIsWrong) {
  StreamPosition position;
  position.seed = 18446744073709551615ULL;
  position.shards = 3;
  position.shuffle_buffer = 4;
  position.epoch = 2;
  position.shard_index = 1;
  position.shard_position = 1234;
  position.draws = 17;
  position.skipped = 1;
  position.buffer = {{0, 0}, {2, 4096}, {1, 28}};
  const std::string text = position.encode();
  EXPECT_EQ(text, "fitscope-shard-stream-position 1 seed=18446744073709551615 shards=3 shuffle_buffer=4 epoch=2 "
                  "shard_index=1 shard_position=1234 draws=17 skipped=1 buffer=3 0:0 2:4096 1:28");
  const StreamPosition back = StreamPosition::decode(text + "\n");
  EXPECT_EQ(back.encode(), text);

  const auto decode_error = [](const std::string& bad) {
    return error_of([&] { StreamPosition::decode(bad); });
  };
  const std::string garbage = decode_error("\x01garbage{}");
  EXPECT_NE(garbage.find("cannot decode a shard stream position: it does not start with "
                         "'fitscope-shard-stream-position'"), std::string::npos) << garbage;
  EXPECT_NE(decode_error("").find("does not start with"), std::string::npos);
  std::string v2 = text;
  v2.replace(v2.find(" 1 "), 3, " 2 ");
  EXPECT_NE(decode_error(v2).find("version 2, this build reads version 1"), std::string::npos) << decode_error(v2);
  EXPECT_NE(decode_error(text.substr(0, text.find(" draws="))).find("it ends before the field 'draws='"),
            std::string::npos);
  std::string renamed = text;
  renamed.replace(renamed.find("epoch="), 6, "epoch:");
  EXPECT_NE(decode_error(renamed).find("expected the field 'epoch=' as word 6, found 'epoch:2'"), std::string::npos)
      << decode_error(renamed);
  std::string negative = text;
  negative.replace(negative.find("draws=17"), 8, "draws=-1");
  EXPECT_NE(decode_error(negative).find("'draws=-1' is not a non-negative integer"), std::string::npos);
  EXPECT_NE(decode_error(text + " 0:1").find("buffer=3 but 4 buffered records follow"), std::string::npos);
  std::string bad_ref = text;
  bad_ref.replace(bad_ref.find("2:4096"), 6, "2-4096");
  EXPECT_NE(decode_error(bad_ref).find("the buffered record '2-4096' is not SHARD:OFFSET"), std::string::npos);
  std::string far_ref = text;
  far_ref.replace(far_ref.find("2:4096"), 6, "3:4096");
  EXPECT_NE(decode_error(far_ref).find("names shard 3 of 3"), std::string::npos);
  std::string overfull = text;
  overfull.replace(overfull.find("shuffle_buffer=4"), 16, "shuffle_buffer=2");
  EXPECT_NE(decode_error(overfull).find("3 buffered records, more than shuffle_buffer=2 holds"), std::string::npos);
}

TEST_F(ShardStreamTest, RestoreRefusesAnotherStreamsPositionAndNamesAFileThatChanged) {
  const std::vector<std::string> shards = write_tfrecord_shards(2, 8);
  ShardStream stream(shards, shuffled(4, 1));
  take(stream, 3);
  const StreamPosition position = stream.position();
  const std::vector<std::string> rest = drain(stream);

  ShardStream other_seed(shards, shuffled(4, 2));
  EXPECT_NE(error_of([&] { other_seed.restore(position); })
                .find("the position was taken from a stream with seed 1, this one has 2"),
            std::string::npos);
  ShardStream other_buffer(shards, shuffled(5, 1));
  EXPECT_NE(error_of([&] { other_buffer.restore(position); }).find("shuffle_buffer 4, this one has 5"),
            std::string::npos);
  ShardStream fewer(std::vector<std::string>{shards[0]}, shuffled(4, 1));
  EXPECT_NE(error_of([&] { fewer.restore(position); }).find("shards 2, this one has 1"), std::string::npos);
  ShardStream untouched(shards, shuffled(4, 2));
  EXPECT_EQ(drain(other_seed), drain(untouched)) << "a refused restore leaves the stream as it was";

  StreamPosition moved = position;
  ASSERT_FALSE(moved.buffer.empty());
  moved.buffer[0].offset += 1;  // not where a record starts
  ShardStream resumed(shards, shuffled(4, 1));
  const std::string error = error_of([&] { resumed.restore(moved); });
  EXPECT_NE(error.find(shards[static_cast<std::size_t>(moved.buffer[0].shard)] + " changed since the position was taken (the "
                       "backup's): at byte offset " + std::to_string(moved.buffer[0].offset) + ", where it held a record, "),
            std::string::npos) << error;
  resumed.restore(position);
  EXPECT_EQ(drain(resumed), rest);
  // a shard rewritten since: said to have changed, not to be corrupt
  const auto s = static_cast<std::size_t>(position.buffer[0].shard);
  write("part-" + std::to_string(s) + ".tfrecord", framed(records_of(7, 3)));
  ShardStream after_change(shards, shuffled(4, 1));
  const std::string changed = error_of([&] { after_change.restore(position); });
  EXPECT_NE(changed.find("cannot restore the shard stream: " + shards[s] + " changed since the position was taken (the backup's)"),
            std::string::npos) << changed;
}

TEST_F(ShardStreamTest, ABadRecordNamesTheFileAndOffsetOrIsSkippedAndCounted) {
  std::vector<std::string> records = records_of(0, 6);
  std::string bytes = framed(records);
  // the data of record 2 changed after its CRC was written: framing intact, the data CRC wrong
  int64_t bad_offset = 0;
  for (int i = 0; i < 2; ++i) bad_offset += 16 + static_cast<int64_t>(records[static_cast<std::size_t>(i)].size());
  bytes[static_cast<std::size_t>(bad_offset + 12)] ^= 0x20;
  write("bad.tfrecord", bytes);
  write("good.tfrecord", framed(records_of(1, 3)));
  const std::vector<std::string> shards{path("bad.tfrecord"), path("good.tfrecord")};

  ShardStream strict(shards, shuffled(0));
  const std::string error = error_of([&] { drain(strict); });
  EXPECT_NE(error.find(path("bad.tfrecord") + ": the record at byte offset " + std::to_string(bad_offset) +
                       ": the data's CRC"), std::string::npos) << error;
  EXPECT_EQ(drain(strict).size(), 3u + 3u) << "the reader stepped over the bad record: a caller may go on after it";

  ShardStreamOptions lenient = shuffled(3);
  lenient.reader.skip_bad_records = true;
  ShardStream stream(shards, lenient);
  const std::vector<std::string> read = drain(stream);
  EXPECT_EQ(read.size(), 6u - 1u + 3u);
  for (const std::string& r : read) EXPECT_EQ(r.find("s0-r2"), std::string::npos) << r;
  EXPECT_EQ(stream.skipped().count, 1);
  ASSERT_EQ(stream.skipped().recent.size(), 1u);
  EXPECT_EQ(stream.skipped().recent[0].find(path("bad.tfrecord") + ": the record at byte offset " +
                                            std::to_string(bad_offset)), 0u) << stream.skipped().recent[0];
  EXPECT_EQ(stream.position().skipped, 1);
  EXPECT_EQ(count_records(path("bad.tfrecord"), lenient.reader), 5);

  // two bad records in a row, the last one of the file among them
  std::string two = framed(records_of(2, 3));
  const int64_t last = 2 * 16 + static_cast<int64_t>(records_of(2, 3)[0].size() + records_of(2, 3)[1].size());
  two[static_cast<std::size_t>(16 + records_of(2, 3)[0].size() + 12)] ^= 1;
  two[static_cast<std::size_t>(last + 12)] ^= 1;
  write("two.tfrecord", two);
  ShardReader reader(path("two.tfrecord"), lenient.reader);
  ShardRecord record;
  ASSERT_TRUE(reader.next(record));
  EXPECT_FALSE(reader.next(record));
  EXPECT_EQ(reader.skipped().count, 2);

  // a lost framing still throws: a truncated record, a broken length CRC
  write("cut.tfrecord", bytes.substr(0, bytes.size() - 3));
  ShardReader cut(path("cut.tfrecord"), lenient.reader);
  const std::string cut_error = error_of([&] {
    while (cut.next(record)) {
    }
  });
  EXPECT_NE(cut_error.find(path("cut.tfrecord") + ": the record at byte offset "), std::string::npos);
  EXPECT_NE(cut_error.find("truncated"), std::string::npos) << cut_error;
  EXPECT_EQ(cut.skipped().count, 1) << "the bad CRC before it";
  std::string broken = framed(records_of(3, 3));
  broken[8] ^= 1;
  write("broken.tfrecord", broken);
  ShardReader broken_reader(path("broken.tfrecord"), lenient.reader);
  EXPECT_NE(error_of([&] { broken_reader.next(record); }).find("the length's CRC"), std::string::npos);
  EXPECT_EQ(broken_reader.skipped().count, 0);
}

TEST_F(ShardStreamTest, ATarSampleWithoutARequiredPartIsSkippedOnlyWhenAsked) {
  write("samples.tar", tar_of({{"k/1", {{"jpg", "1"}, {"cls", "1"}}},
                                 {"k/2", {{"jpg", "2"}}},
                                 {"k/3", {{"png", "3"}, {"cls", "3"}}}}));
  ShardReaderOptions options;
  options.format = ShardFormat::kTar;
  options.required_parts = {"jpg|png", "cls"};
  ShardReader strict(path("samples.tar"), options);
  ShardRecord record;
  ASSERT_TRUE(strict.next(record));
  const std::string error = error_of([&] { strict.next(record); });
  // each member is a 512-byte header and a 512-byte block of data: k/2 starts after k/1's two members
  EXPECT_NE(error.find(path("samples.tar") + ": the sample at byte offset 2048 (key 'k/2') has no 'cls' part"),
            std::string::npos) << error;

  options.skip_bad_records = true;
  ShardReader lenient(path("samples.tar"), options);
  std::vector<std::string> keys;
  while (lenient.next(record)) keys.push_back(record.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"k/1", "k/3"}));
  EXPECT_EQ(lenient.skipped().count, 1);
  EXPECT_NE(lenient.skipped().recent.at(0).find("byte offset 2048"), std::string::npos);
  EXPECT_EQ(count_records(path("samples.tar"), options), 2);

  // a corrupt header loses the archive's framing: it throws even so
  std::string corrupt = tar_of({{"k/1", {{"jpg", "1"}}}, {"k/2", {{"jpg", "2"}}}});
  corrupt[1024 + 148] = 'x';  // the second member's checksum field
  write("corrupt.tar", corrupt);
  ShardReader broken(path("corrupt.tar"), options);
  const std::string corrupt_error = error_of([&] {
    while (broken.next(record)) {
    }
  });
  EXPECT_NE(corrupt_error.find(path("corrupt.tar") + ": the header at byte offset 1024"), std::string::npos)
      << corrupt_error;
  EXPECT_EQ(broken.skipped().count, 0);
}

TEST_F(ShardStreamTest, CountRecordsReadsAShardThrough) {
  write("plain.tfrecord", framed(records_of(0, 13)));
  write_gz("packed.tfrecord.gz", framed(records_of(1, 21)));
  write("empty.tfrecord", "");
  EXPECT_EQ(count_records(path("plain.tfrecord"), {}), 13);
  EXPECT_EQ(count_records(path("packed.tfrecord.gz"), {}), 21);
  EXPECT_EQ(count_records(path("empty.tfrecord"), {}), 0);
  const std::vector<std::string> tars = write_tar_shards(1, 9);
  ShardReaderOptions tar;
  tar.format = ShardFormat::kTar;
  EXPECT_EQ(count_records(tars[0], tar), 9);
  EXPECT_NE(error_of([&] { count_records(path("missing.tfrecord"), {}); }).find(path("missing.tfrecord")),
            std::string::npos);
}

TEST_F(ShardStreamTest, TheStreamRefusesNoShardsANegativeBufferOrEpoch) {
  EXPECT_NE(error_of([] { ShardStream({}, {}); }).find("at least one shard"), std::string::npos);
  EXPECT_NE(error_of([] { ShardStream({"x"}, shuffled(-1)); }).find("shuffle_buffer must be >= 0"), std::string::npos);
  ShardStream stream({"x"}, {});
  EXPECT_NE(error_of([&] { stream.set_epoch(-1); }).find("epoch must be >= 0, got -1"), std::string::npos);
  ShardRecord record;
  EXPECT_NE(error_of([&] { stream.next(record); }).find("x: cannot open"), std::string::npos)
      << "files are opened when first read";
}
