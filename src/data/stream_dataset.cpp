#include "fitscope/data/stream_dataset.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace fitscope {
namespace {

const char* format_name(ShardFormat format) { return format == ShardFormat::kTar ? "tar" : "tfrecord"; }

ShardReaderOptions reader_options(const StreamDatasetOptions& o, const RecordDecoder& decoder) {
  ShardReaderOptions r;
  r.format = o.format;
  r.skip_bad_records = o.skip_bad_records;
  // a tar sample must have its input and target (a member without its pair is a bad record)
  if (o.format == ShardFormat::kTar) r.required_parts = {decoder.options().features.input, decoder.options().features.target};
  return r;
}

}  // namespace

StreamDataset::StreamDataset(std::string pattern, StreamDatasetOptions options)
    : pattern_(std::move(pattern)), options_(std::move(options)) {
  options_.decoder.format = options_.format;
  if (options_.shuffle_buffer < 0) {
    throw std::invalid_argument("StreamDatasetOptions::shuffle_buffer must be >= 0 (0 or 1: no shuffle), got " +
                                std::to_string(options_.shuffle_buffer));
  }
  decoder_ = std::make_shared<const RecordDecoder>(options_.decoder);
  all_shards_ = list_shards(pattern_);
  shards_ = assign_shards(all_shards_, options_.rank, options_.world_size);
  for (std::size_t i = 0; i < shards_.size(); ++i) {  // rank, rank + W, ...: where assign_shards took them
    shard_indices_.push_back(options_.rank + static_cast<int64_t>(i) * options_.world_size);
  }
  // one pass over this rank's shards: the records counted and checked (no pixels decoded), the bad
  // ones the reader cannot skip itself kept by shard and offset, the first good one decoded for the shape
  const ShardReaderOptions read = reader_options(options_, *decoder_);
  ShardRecord record;
  for (std::size_t s = 0; s < shards_.size(); ++s) {
    ShardReader reader(shards_[s], read, static_cast<int64_t>(s));
    while (reader.next(record)) {
      try {
        if (!first_.data.defined()) {
          first_ = decoder_->decode(record, shards_[s]);
        } else {
          decoder_->check(record, shards_[s]);
        }
      } catch (const std::invalid_argument& e) {
        if (!options_.skip_bad_records) throw;
        skipped_.note(e.what());
        bad_records_.insert({record.shard, record.offset});
        continue;
      }
      ++records_;
    }
    skipped_.take(reader.skipped());  // what the reader stepped over itself
  }
  if (records_ == 0) {
    throw std::invalid_argument(source() + ": rank " + std::to_string(options_.rank) + "'s " + std::to_string(shards_.size()) +
                                " shards hold no record" + (skipped_.count ? " that is not bad" : "") +
                                " (expected shards with records, such as write_synthetic_shards writes)");
  }
  records_per_epoch_ = records_;
}

Example StreamDataset::get(int64_t index) const {
  throw std::invalid_argument(source() + " is a stream, read in order by a Loader: it has no example " + std::to_string(index) +
                              " by index (expected a folder or a file where examples are taken by index, as predict does)");
}

std::string StreamDataset::source() const { return std::string(format_name(options_.format)) + ":" + pattern_; }

std::shared_ptr<StreamDataset> StreamDataset::limited_to(int64_t records_per_epoch) const {
  if (records_per_epoch < 1 || records_per_epoch > records_) {
    throw std::invalid_argument(source() + ": " + std::to_string(records_per_epoch) + " records per epoch, but rank " +
                                std::to_string(options_.rank) + "'s shards hold " + std::to_string(records_) +
                                " (expected 1 to " + std::to_string(records_) + ")");
  }
  auto copy = std::make_shared<StreamDataset>(*this);
  copy->records_per_epoch_ = records_per_epoch;
  return copy;
}

ShardStream StreamDataset::open_stream() const {
  ShardStreamOptions o;
  o.reader = reader_options(options_, *decoder_);
  o.seed = options_.seed;
  o.shuffle_buffer = options_.shuffle_buffer;
  return ShardStream(shards_, o);
}

bool StreamDataset::next_record(ShardStream& stream, ShardRecord& record) const {
  while (stream.next(record)) {
    if (bad_records_.empty() || bad_records_.count({record.shard, record.offset}) == 0) return true;
  }
  return false;
}

Example StreamDataset::decode(const ShardRecord& record, const at::Tensor& into) const {
  return decoder_->decode(record, shard_path(record), into);
}

}  // namespace fitscope
