#include "fitscope/data/streams/stream_dataset.hpp"

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
  r.max_record_bytes = o.max_record_bytes;
  // a tar sample must have its input and target (a member without its pair is a bad record)
  if (o.format == ShardFormat::kTar) r.required_parts = {decoder.options().features.input, decoder.options().features.target};
  return r;
}

}  // namespace

struct StreamDataset::DecodeFailures {
  std::mutex mutex;
  std::set<std::pair<int64_t, int64_t>> records;  // (shard, offset)
  SkippedRecords skipped;
};

StreamDataset::StreamDataset(std::string pattern, StreamDatasetOptions options)
    : pattern_(std::move(pattern)), options_(std::move(options)), decode_failures_(std::make_shared<DecodeFailures>()) {
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
        } else if (const std::vector<int64_t> shape = decoder_->check(record, shards_[s]); shape != first_.data.sizes().vec()) {
          throw std::invalid_argument(shards_[s] + ": the record at byte offset " + std::to_string(record.offset) +
                                      " gives an input of shape " + c10::str(at::IntArrayRef(shape)) + ", the stream's first " +
                                      c10::str(first_.data.sizes()) + " (expected inputs of one shape: feature vectors of one "
                                      "length, images of one size and channel count, or RecordDecoderOptions' size to resize to)");
        }
      } catch (const std::invalid_argument& e) {
        if (!options_.skip_bad_records) throw;
        skipped_.note(e.what());
        bad_records_.insert({shard_indices_[s], record.offset});
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

std::vector<std::string> StreamDataset::skipped() const {
  std::lock_guard<std::mutex> lock(decode_failures_->mutex);
  SkippedRecords all = skipped_;
  all.take(decode_failures_->skipped);
  return all.recent;
}

int64_t StreamDataset::skipped_count() const {
  std::lock_guard<std::mutex> lock(decode_failures_->mutex);
  return skipped_.count + decode_failures_->skipped.count;
}

void StreamDataset::note_bad_record(const ShardRecord& record, const std::string& reason) const {
  std::lock_guard<std::mutex> lock(decode_failures_->mutex);
  if (decode_failures_->records.insert({record.shard, record.offset}).second) decode_failures_->skipped.note(reason);
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
  o.shuffle_buffer_bytes = options_.shuffle_buffer_bytes;
  o.compact = [decoder = decoder_](ShardRecord& record) { decoder->compact(record); };
  return ShardStream(shards_, o);
}

bool StreamDataset::next_record(ShardStream& stream, ShardRecord& record) const {
  while (stream.next(record)) {
    record.shard = shard_indices_[static_cast<std::size_t>(record.shard)];  // the stream's own index: into shards_
    if (bad_records_.empty() || bad_records_.count({record.shard, record.offset}) == 0) return true;
  }
  return false;
}

std::vector<RecordAt> StreamDataset::rest_of_pass(int64_t pass, int64_t pass_ranks, int64_t done) const {
  const auto shards = static_cast<int64_t>(all_shards_.size());
  if (pass_ranks < 1 || pass_ranks > shards) {
    throw std::invalid_argument(source() + ": a pass of " + std::to_string(pass_ranks) + " ranks' streams (expected 1 to " +
                                std::to_string(shards) + " ranks: one shard or more each)");
  }
  // the pass's ranks, counted as the fit counted them: each drew as many records as the fewest held
  std::vector<StreamDataset> ranks;
  int64_t per_rank = 0;
  for (int64_t q = 0; q < pass_ranks; ++q) {
    StreamDatasetOptions o = options_;
    o.rank = q;
    o.world_size = pass_ranks;
    ranks.emplace_back(pattern_, o);
    if (ranks.back().all_shards() != all_shards_) {
      throw std::invalid_argument(source() + " matches other files than it did when this run started (expected the same shards)");
    }
    per_rank = q == 0 ? ranks.back().records() : std::min(per_rank, ranks.back().records());
  }
  const int64_t total = per_rank * pass_ranks;
  if (done < 0 || done > total) {
    throw std::invalid_argument(source() + ": " + std::to_string(done) + " records of pass " + std::to_string(pass) + " done, which " +
                                std::to_string(pass_ranks) + " ranks' streams of " + std::to_string(per_rank) +
                                " records each make (expected 0 to " + std::to_string(total) + ")");
  }
  const int64_t rest = total - done, world = options_.world_size, rank = options_.rank;
  if (rest == 0) return {};
  const int64_t share = (rest + world - 1) / world;
  std::vector<RecordAt> mine(static_cast<std::size_t>(share));
  ShardRecord record;
  for (int64_t q = 0; q < pass_ranks; ++q) {
    const StreamDataset& old = ranks[static_cast<std::size_t>(q)];
    ShardStream stream = old.open_stream();
    stream.set_epoch(pass);
    for (int64_t j = 0; j < per_rank; ++j) {
      if (!old.next_record(stream, record)) throw std::logic_error(source() + ": a stream ended before the records it counted");
      const int64_t k = j * pass_ranks + q - done;  // the record's place in the rest: its pass order less what was done
      if (k < 0) continue;
      if (k % world == rank) mine[static_cast<std::size_t>(k / world)] = {record.shard, record.offset};
      // the shortest shares are padded with the rest's first records, as DistributedSampler pads
      if (const int64_t padded = k + rest; padded % world == rank && padded / world < share) {
        mine[static_cast<std::size_t>(padded / world)] = {record.shard, record.offset};
      }
    }
  }
  return mine;
}

ListedRecords StreamDataset::open_listed(std::vector<RecordAt> records) const {
  return ListedRecords(all_shards_, reader_options(options_, *decoder_), std::move(records));
}

Example StreamDataset::decode(const ShardRecord& record, const at::Tensor& into) const {
  return decoder_->decode(record, shard_path(record), into);
}

}  // namespace fitscope
