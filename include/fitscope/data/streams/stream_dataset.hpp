#pragma once
/// StreamDataset: sharded record files (TFRecord or WebDataset tar, shard_stream.hpp) as a data set
/// the Loader reads in order, for `--data tfrecord:GLOB | tar:GLOB`. The shards of the glob are split
/// across ranks by file (assign_shards: rank r reads shards r, r + W, ...); nothing is indexed up
/// front: the constructor reads this rank's shards through once to count their records (what a rank
/// needs to run as many steps as the others) and to decode the first record (the example shape), and
/// keeps nothing of them.
///
/// A Loader given a StreamDataset opens its own ShardStream (open_stream) and reads the records of a
/// batch in order on one thread at a time, while its workers decode the records of the batches
/// (decode) in parallel; it records the stream's position after every batch it hands out, so a
/// backup resumes exactly (Loader::stream_position). A pass resumed on another number of ranks is
/// read from the records its ranks had left, wherever they lie (rest_of_pass, open_listed). get() is
/// not available: a stream has no random access, and FitOptions::validation_split, caching and
/// samplers are refused for it.
///
/// Immutable after construction: one StreamDataset serves several loaders. No per-record state is kept,
/// so memory is the shuffle buffer plus the batches in flight, whatever the data set's size (and, for
/// a pass resumed on another number of ranks, 16 bytes per record of this rank's share of its rest).

#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "fitscope/data/sources/dataset.hpp"
#include "fitscope/data/streams/listed_records.hpp"
#include "fitscope/data/streams/record_decoder.hpp"
#include "fitscope/data/streams/shard_stream.hpp"

namespace fitscope {

struct StreamDatasetOptions {
  /// The shards' format, the features read and how images are shaped (RecordDecoderOptions::format
  /// is taken from here).
  ShardFormat format = ShardFormat::kTfRecord;
  RecordDecoderOptions decoder;
  /// tf.data's shuffle(buffer_size): records held for the shuffle; 0 or 1 = records in file order and
  /// shards in their sorted order.
  int64_t shuffle_buffer = 0;
  uint64_t seed = 0;  ///< seeds the shard order and the shuffle of each epoch
  /// Skip the records the reader can step over (a bad data CRC, an Example that does not decode, a
  /// tar sample without its pair) with a count and a reason, instead of failing.
  bool skip_bad_records = false;
  /// The most bytes a record may hold (ShardReaderOptions::max_record_bytes): a larger one is stepped
  /// over, not held, and is a bad record. With the shuffle buffer's byte budget it bounds the stream's
  /// memory: about shuffle_buffer_bytes + (batches read ahead x batch size) x max_record_bytes.
  int64_t max_record_bytes = int64_t{256} << 20;
  /// ShardStreamOptions::shuffle_buffer_bytes: the shuffle buffer holds at most this many bytes.
  int64_t shuffle_buffer_bytes = int64_t{1} << 30;
  int64_t rank = 0, world_size = 1;  ///< this rank's shards: assign_shards(list_shards(glob), rank, world_size)
};

class StreamDataset : public Dataset {
 public:
  /// Lists the glob's shards, takes this rank's, counts their records and decodes the first. Throws
  /// std::invalid_argument when no file matches, when there are fewer shards than ranks (naming both
  /// counts), for options out of range, for a rank's shards without a record, and for the first bad
  /// record that is not skipped (naming the file, the record's offset and the feature).
  StreamDataset(std::string pattern, StreamDatasetOptions options);

  /// Records read per epoch: this rank's records, or fewer after limited_to.
  int64_t size() const override { return records_per_epoch_; }
  /// Throws std::invalid_argument: a stream is read in order, by a Loader (so predict, which takes
  /// examples by index, refuses it).
  Example get(int64_t index) const override;
  /// "tfrecord:GLOB" or "tar:GLOB".
  std::string source() const override;
  std::vector<int64_t> example_shape() const override { return first_.data.sizes().vec(); }
  /// The first good record of this rank's shards, decoded (to try a model on).
  const Example& first() const { return first_; }
  /// The bad records skipped (with skip_bad_records): those the count found, and those a loader found
  /// since when decoding (note_bad_record), "reason" each, the reason naming the file and the record's
  /// offset. At most SkippedRecords::kRecentReasons; skipped_count() counts them all, each record once.
  /// Thread-safe.
  std::vector<std::string> skipped() const override;
  int64_t skipped_count() const;
  /// With skip_bad_records: a record of open_stream()'s whose input failed to decode while training
  /// (its pixels, which the count does not decode), left out of its batch by the loader. Counted once
  /// per record, however many epochs meet it. Thread-safe; shared with the copies limited_to makes.
  void note_bad_record(const ShardRecord& record, const std::string& reason) const;

  /// Every shard the glob matched, sorted, and the indices into it of this rank's.
  const std::vector<std::string>& all_shards() const { return all_shards_; }
  const std::vector<int64_t>& shard_indices() const { return shard_indices_; }
  /// The records of this rank's shards (skipped records left out).
  int64_t records() const { return records_; }
  const StreamDatasetOptions& options() const { return options_; }

  /// A copy that reads `records_per_epoch` records per epoch (1 <= n <= records()): the ranks agree on
  /// the smallest count so that each runs the same steps. Throws std::invalid_argument otherwise.
  std::shared_ptr<StreamDataset> limited_to(int64_t records_per_epoch) const;
  /// A stream over this rank's shards at epoch 0, for one loader.
  ShardStream open_stream() const;
  /// The next record of `stream` (open_stream()'s) that is not one the count found bad and skipped;
  /// false at the end of the epoch. Its shard is an index into all_shards().
  bool next_record(ShardStream& stream, ShardRecord& record) const;
  /// This rank's share of what a pass of `pass_ranks` ranks' streams has left after the job took `done`
  /// of its records, for a pass resumed on another number of ranks (options().world_size). The pass's
  /// order is its ranks' draws interleaved: each rank's first record by rank, then each one's second,
  /// and so on (so the job's steps take a prefix of it, and `done` counts one), each rank drawing as
  /// many as the fewest any of them holds (what the fit reads). The rest is split as DistributedSampler
  /// splits a pass: this rank takes its places rank, rank + W, ... of it, the shorter shares padded
  /// with the rest's first records, so each rank holds ceil(rest / W). Reads the data set twice (the
  /// old ranks' records counted, then their draws replayed). Throws std::invalid_argument for
  /// pass_ranks outside [1, shards], for `done` outside [0, the pass's records], or when the glob
  /// matches other files than it did.
  std::vector<RecordAt> rest_of_pass(int64_t pass, int64_t pass_ranks, int64_t done) const;
  /// Reads `records` (rest_of_pass's: shards by their index into all_shards()), in that order.
  ListedRecords open_listed(std::vector<RecordAt> records) const;
  /// The file of a record of next_record's or of open_listed's.
  const std::string& shard_path(const ShardRecord& record) const { return all_shards_.at(static_cast<std::size_t>(record.shard)); }
  /// A record of next_record's or of open_listed's as an Example (its input decoded into `into` when
  /// that has its shape: RecordDecoder::decode). Thread-safe.
  Example decode(const ShardRecord& record, const at::Tensor& into = {}) const;

 private:
  std::string pattern_;
  StreamDatasetOptions options_;
  std::vector<std::string> all_shards_, shards_;
  std::vector<int64_t> shard_indices_;
  std::shared_ptr<const RecordDecoder> decoder_;
  int64_t records_ = 0, records_per_epoch_ = 0;
  Example first_;
  SkippedRecords skipped_;
  std::set<std::pair<int64_t, int64_t>> bad_records_;  // (shard, offset) the count skipped that the reader reads
  struct DecodeFailures;                                 // what loaders found bad since (note_bad_record)
  std::shared_ptr<DecodeFailures> decode_failures_;
};

}  // namespace fitscope
