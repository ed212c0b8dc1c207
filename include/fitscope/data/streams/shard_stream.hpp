#pragma once
/// Sharded record files read as one stream: the shard files of a glob, split across ranks, read one
/// shard after another in a seeded order per epoch and shuffled in a bounded buffer, with a position
/// that restores the stream exactly (the records drawn after restore() are byte-identical to an
/// uninterrupted stream's). A shard is a TFRecord file (plain or gzip; one record is one record's
/// bytes, a tf.train.Example's for TensorFlow's datasets) or a tar archive (one record is one
/// WebDataset sample, its members grouped by key). No libtorch.
///
/// The shuffle is tf.data's `shuffle(buffer_size)`: before each draw the buffer is topped up with the
/// next records to its size, a uniformly chosen slot is handed out (the last slot's record moves into
/// it), and once the shards are read through the buffer drains in random order. Memory is bounded by
/// the buffer (in records and in bytes) plus the record handed out. Each draw's slot is a pure function of (seed, epoch, draw
/// number), so a position holds no random state: only where the reader stands and which records the
/// buffer holds, by shard and offset; restore() reads those again.
///
/// Errors in the bytes are std::invalid_argument naming the file and the record's offset (the
/// readers' own messages). With ShardReaderOptions::skip_bad_records, a record that can be stepped
/// over (a TFRecord record whose data CRC is wrong; a tar sample that lacks a required part, repeats an
/// extension or is too large) is skipped and noted in skipped(); an error after which the reader cannot
/// find the next record (a bad length CRC, a truncated file, corrupt gzip or tar headers) still throws.
/// Not thread-safe: one stream per thread. Movable, not copyable.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace fitscope {

class TfRecordReader;
class TarSampleReader;

enum class ShardFormat {
  kTfRecord,  ///< TFRecord framing, plain or gzip (told by the file's first bytes)
  kTar,       ///< a tar archive of WebDataset samples
};

/// A record by where it lies: the index of its shard (in the list its reader was given) and its byte
/// offset there (ShardRecord::offset).
struct RecordAt {
  int64_t shard = 0;
  int64_t offset = 0;
  bool operator==(const RecordAt& o) const { return shard == o.shard && offset == o.offset; }
  bool operator<(const RecordAt& o) const { return shard != o.shard ? shard < o.shard : offset < o.offset; }
};

/// One record of a shard, whichever the format.
struct ShardRecord {
  std::string bytes;                          ///< TFRecord: the record's data; tar: empty
  std::string key;                            ///< tar: the sample's key; TFRecord: empty
  std::map<std::string, std::string> parts;   ///< tar: extension -> member bytes; TFRecord: empty
  int64_t shard = -1;   ///< the index of its shard: in ShardStream::shards(), or the ShardReader's
  int64_t offset = -1;  ///< its byte offset in the shard (uncompressed for gzip): ShardReader::seek reads it again
};

/// How many records were skipped as bad, and why (each reason names the file and the offset).
struct SkippedRecords {
  static constexpr std::size_t kRecentReasons = 8;
  int64_t count = 0;
  std::vector<std::string> recent;  ///< the reasons of the last kRecentReasons skipped records, oldest first

  /// Counts one more skipped record, keeping `reason` among the recent ones.
  void note(std::string reason);
  /// Adds what `from` skipped since it counted `before` (with the reasons it still keeps).
  void take(const SkippedRecords& from, int64_t before = 0);
};

struct ShardReaderOptions {
  ShardFormat format = ShardFormat::kTfRecord;
  /// Tar: the parts every sample must have (TarSampleOptions::required: {"jpg|png", "cls"}).
  std::vector<std::string> required_parts;
  /// Skip a bad record that the reader can step over, instead of throwing (see above).
  bool skip_bad_records = false;
  /// The most bytes a record may hold (a TFRecord record's data; a tar sample's members together, each
  /// member too). A record declaring more is stepped over without being held and is a bad record
  /// (skippable): so no record takes more memory than this, whatever the shard declares.
  int64_t max_record_bytes = int64_t{256} << 20;
};

/// Reads the records of one shard file in order. Not thread-safe. Movable, not copyable.
class ShardReader {
 public:
  /// Opens `path`; `shard` is the index its records carry. Throws std::invalid_argument when the file
  /// cannot be opened, or for required parts that are not a tar sample's (an empty extension, or any
  /// for a TFRecord shard).
  explicit ShardReader(const std::string& path, ShardReaderOptions options = {}, int64_t shard = 0);
  ~ShardReader();
  ShardReader(ShardReader&&) noexcept;
  ShardReader& operator=(ShardReader&&) noexcept;

  /// The next record in `record` (replaced), or false at the end of the shard. The format reader's
  /// errors pass through, but for the bad records skip_bad_records steps over.
  bool next(ShardRecord& record);
  /// Where the next record starts: where to seek() to resume.
  int64_t position() const;
  /// Moves to `offset`, a position() this reader had or a record's offset.
  void seek(int64_t offset);
  const std::string& path() const { return path_; }
  /// The records skipped since opening (always none without skip_bad_records).
  const SkippedRecords& skipped() const { return skipped_; }

 private:
  bool read(ShardRecord& record);

  std::string path_;
  ShardReaderOptions options_;
  int64_t shard_;
  std::unique_ptr<TfRecordReader> tfrecord_;  // one of the two, by the format
  std::unique_ptr<TarSampleReader> tar_;
  SkippedRecords skipped_;
};

/// The number of records of the shard at `path` (read through; skipped records do not count).
int64_t count_records(const std::string& path, const ShardReaderOptions& options);

/// The files matching `pattern` (POSIX glob(3), e.g. "data/train-*.tfrecord"; directories left out),
/// sorted by name bytewise, so every rank sees the same list whatever its locale. Throws
/// std::invalid_argument naming the pattern when no file matches.
std::vector<std::string> list_shards(const std::string& pattern);

/// Rank `rank`'s shards of `shards` (in their order): shards rank, rank + world_size, ... The same
/// every epoch, so each rank reads only its files. Throws std::invalid_argument for a rank outside
/// [0, world_size), or when there are fewer shards than ranks (naming both counts).
std::vector<std::string> assign_shards(const std::vector<std::string>& shards, int64_t rank, int64_t world_size);

/// Where a ShardStream stands, exactly: with the stream's shards and options, enough to restore it.
struct StreamPosition {
  static constexpr int64_t kVersion = 1;
  using BufferedRecord = RecordAt;  ///< its shard an index into ShardStream::shards()
  // the stream it was taken from: restore() refuses another
  uint64_t seed = 0;
  int64_t shards = 0;
  int64_t shuffle_buffer = 0;
  // where it stands
  int64_t epoch = 0;
  int64_t shard_index = 0;     ///< into the epoch's shard order (== shards when all were read)
  int64_t shard_position = 0;  ///< that shard's ShardReader::position() (0 before it is opened)
  int64_t draws = 0;           ///< records handed out in the epoch
  int64_t skipped = 0;         ///< SkippedRecords::count
  std::vector<BufferedRecord> buffer;  ///< the shuffle buffer's records, in slot order

  /// One line of text, "fitscope-shard-stream-position 1 seed=... buffer=N SHARD:OFFSET ...".
  std::string encode() const;
  /// Reads encode()'s text. Throws std::invalid_argument naming what is wrong (another text, another
  /// version, a missing or malformed field, a value out of range).
  static StreamPosition decode(const std::string& text);
};

struct ShardStreamOptions {
  ShardReaderOptions reader;
  uint64_t seed = 0;
  /// Records held for the shuffle; 0 or 1: no shuffle (shards in their given order, records in file order).
  int64_t shuffle_buffer = 0;
  /// The most bytes the shuffle buffer holds: it is topped up while it holds fewer records than
  /// shuffle_buffer and fewer bytes than this (at least one record), so large records shuffle in a
  /// smaller window instead of taking shuffle_buffer times their size. 0 = no byte budget. Which
  /// records are held depends only on the records, so a position restores the same buffer.
  int64_t shuffle_buffer_bytes = int64_t{1} << 30;
  /// Called on each record as it is read, before it enters the buffer (and on those restore() reads
  /// again): StreamDataset drops there what its decoder will not read, so that the buffer holds only
  /// that. Must not throw. Empty: records kept as read.
  std::function<void(ShardRecord&)> compact;
};

class ShardStream {
 public:
  /// Reads `shards` (this rank's: assign_shards) from epoch 0. Opens nothing yet. Throws
  /// std::invalid_argument for no shards, or a negative shuffle buffer.
  ShardStream(std::vector<std::string> shards, ShardStreamOptions options);
  ~ShardStream();
  ShardStream(ShardStream&&) noexcept;
  ShardStream& operator=(ShardStream&&) noexcept;

  /// Starts `epoch` (>= 0) from its beginning: the shards in the order seeded by (seed, epoch) (their
  /// given order without shuffle), the buffer empty.
  void set_epoch(int64_t epoch);
  /// The epoch's next record in `record` (replaced), or false once the epoch is read through (and on
  /// every later call until set_epoch). The readers' errors pass through; the stream then stands where
  /// its reader does (past a record the reader could step over, and the same error again where not).
  bool next(ShardRecord& record);

  StreamPosition position() const;
  /// Puts the stream where `position` stood: reads the buffered records again (each shard opened once)
  /// and reopens the current shard at its position. Throws std::invalid_argument for a position taken
  /// from another stream (seed, shard count or buffer size differ), or when a buffered record is no
  /// longer where it was (the file changed); a restore that throws leaves the stream as it was.
  void restore(const StreamPosition& position);

  int64_t epoch() const { return epoch_; }
  const std::vector<std::string>& shards() const { return shards_; }
  /// The current epoch's order: indices into shards().
  const std::vector<int64_t>& shard_order() const { return order_; }
  /// Records in the shuffle buffer now (at most shuffle_buffer).
  int64_t buffered() const { return static_cast<int64_t>(buffer_.size()); }
  const SkippedRecords& skipped() const { return skipped_; }

 private:
  bool read_into_buffer();

  std::vector<std::string> shards_;
  ShardStreamOptions options_;
  std::size_t capacity_;  // the buffer's size, at least 1
  int64_t epoch_ = 0;
  std::vector<int64_t> order_;
  std::size_t shard_index_ = 0;
  int64_t shard_position_ = 0;
  std::unique_ptr<ShardReader> reader_;  // on order_[shard_index_], opened when first read
  int64_t draws_ = 0;
  std::vector<ShardRecord> buffer_;
  int64_t buffer_bytes_ = 0;  // the bytes of buffer_'s records
  SkippedRecords skipped_;
};

}  // namespace fitscope
