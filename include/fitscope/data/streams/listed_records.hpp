#pragma once
/// Records of shard files read in an order given record by record: the rest of a stream's pass that
/// another number of ranks split anew (StreamDataset::rest_of_pass), where a rank reads records of any
/// shard, not only its own. Each shard is opened when first met and kept open, at most kOpenShards at
/// once (the one read longest ago is closed first); a record is reached with ShardReader::seek, so a
/// plain file costs a disk seek per record, a gzip file read backwards decompresses from its start again.
/// No libtorch. Not thread-safe. Movable, not copyable.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fitscope/data/streams/shard_stream.hpp"  // ShardReader, RecordAt

namespace fitscope {

class ListedRecords {
 public:
  static constexpr std::size_t kOpenShards = 16;

  /// Reads `records` of `shards`, in the order listed. Throws std::invalid_argument for a record whose
  /// shard is not an index into `shards`. Opens nothing yet.
  ListedRecords(std::vector<std::string> shards, ShardReaderOptions options, std::vector<RecordAt> records);
  ~ListedRecords();
  ListedRecords(ListedRecords&&) noexcept;
  ListedRecords& operator=(ListedRecords&&) noexcept;

  /// The next listed record in `record` (replaced; its shard the index into the shards given), or false
  /// after the last. Throws std::invalid_argument naming the file and the offset when no record starts
  /// there any more (the file changed), and the reader's errors.
  bool next(ShardRecord& record);
  /// Records listed.
  int64_t size() const { return static_cast<int64_t>(records_.size()); }

 private:
  struct Open;
  ShardReader& reader(int64_t shard);

  std::vector<std::string> shards_;
  ShardReaderOptions options_;
  std::vector<RecordAt> records_;
  std::size_t next_ = 0;
  std::vector<Open> open_;
  int64_t reads_ = 0;
};

}  // namespace fitscope
