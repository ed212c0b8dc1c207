#include "fitscope/data/streams/listed_records.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace fitscope {

struct ListedRecords::Open {
  int64_t shard;
  ShardReader reader;
  int64_t last_read;
};

ListedRecords::ListedRecords(std::vector<std::string> shards, ShardReaderOptions options, std::vector<RecordAt> records)
    : shards_(std::move(shards)), options_(std::move(options)), records_(std::move(records)) {
  for (const RecordAt& r : records_) {
    if (r.shard < 0 || r.shard >= static_cast<int64_t>(shards_.size()) || r.offset < 0) {
      throw std::invalid_argument("a listed record at shard " + std::to_string(r.shard) + ", byte offset " +
                                  std::to_string(r.offset) + " (expected a shard in [0, " + std::to_string(shards_.size()) +
                                  ") and an offset >= 0)");
    }
  }
}

ListedRecords::~ListedRecords() = default;
ListedRecords::ListedRecords(ListedRecords&&) noexcept = default;
ListedRecords& ListedRecords::operator=(ListedRecords&&) noexcept = default;

ShardReader& ListedRecords::reader(int64_t shard) {
  ++reads_;
  auto it = std::find_if(open_.begin(), open_.end(), [shard](const Open& o) { return o.shard == shard; });
  if (it == open_.end()) {
    if (open_.size() >= kOpenShards) {
      open_.erase(std::min_element(open_.begin(), open_.end(),
                                   [](const Open& a, const Open& b) { return a.last_read < b.last_read; }));
    }
    open_.push_back(Open{shard, ShardReader(shards_[static_cast<std::size_t>(shard)], options_, shard), 0});
    it = open_.end() - 1;
  }
  it->last_read = reads_;
  return it->reader;
}

bool ListedRecords::next(ShardRecord& record) {
  if (next_ == records_.size()) return false;
  const RecordAt at = records_[next_];
  ShardReader& r = reader(at.shard);
  if (r.position() != at.offset) r.seek(at.offset);
  if (!r.next(record) || record.offset != at.offset) {
    throw std::invalid_argument(shards_[static_cast<std::size_t>(at.shard)] + ": no record starts at byte offset " +
                                std::to_string(at.offset) + " any more (expected the record a pass began with there: "
                                "did the shard change?)");
  }
  ++next_;
  return true;
}

}  // namespace fitscope
