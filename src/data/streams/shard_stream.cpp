#include "fitscope/data/streams/shard_stream.hpp"

#include <glob.h>
#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <numeric>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "fitscope/data/sources/sample_random.hpp"
#include "fitscope/data/sources/sampler.hpp"
#include "fitscope/data/formats/tar_format.hpp"
#include "fitscope/data/formats/tfrecord_format.hpp"

namespace fitscope {
namespace {

constexpr const char* kPositionMagic = "fitscope-shard-stream-position";
constexpr uint64_t kDrawStream = 0x5B0FF3;  // the shuffle buffer's draws, apart from other seeded streams

std::string counted(std::size_t n, const char* noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

void check_reader_options(const ShardReaderOptions& options) {
  if (options.max_record_bytes < 1) {
    throw std::invalid_argument("ShardReaderOptions::max_record_bytes must be >= 1, got " + std::to_string(options.max_record_bytes));
  }
  if (options.format == ShardFormat::kTfRecord && !options.required_parts.empty()) {
    throw std::invalid_argument("ShardReaderOptions::required_parts names the parts of tar samples; a TFRecord "
                                "record has none (expected no required parts for ShardFormat::kTfRecord)");
  }
}

// what a record holds in memory, for the shuffle buffer's byte budget
int64_t record_bytes(const ShardRecord& record) {
  auto bytes = static_cast<int64_t>(record.bytes.size() + record.key.size());
  for (const auto& [extension, part] : record.parts) bytes += static_cast<int64_t>(extension.size() + part.size());
  return bytes;
}

// the effective buffer: 0 and 1 both mean records in file order
std::size_t buffer_capacity(int64_t shuffle_buffer) {
  return static_cast<std::size_t>(std::max<int64_t>(1, shuffle_buffer));
}

std::vector<int64_t> shard_order_of(std::size_t shards, const ShardStreamOptions& options, int64_t epoch) {
  if (buffer_capacity(options.shuffle_buffer) == 1) {
    std::vector<int64_t> order(shards);
    std::iota(order.begin(), order.end(), int64_t{0});
    return order;
  }
  return seeded_permutation(static_cast<int64_t>(shards), options.seed, epoch);
}

template <typename Int>
bool parse_number(std::string_view text, Int& value) {
  if (text.empty() || text[0] == '-' || text[0] == '+') return false;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() && end == text.data() + text.size();
}

}  // namespace

// ---- ShardReader ----

ShardReader::ShardReader(const std::string& path, ShardReaderOptions options, int64_t shard)
    : path_(path), options_(std::move(options)), shard_(shard) {
  check_reader_options(options_);
  if (options_.format == ShardFormat::kTfRecord) {
    TfRecordReaderOptions record_options;
    record_options.max_record_bytes = options_.max_record_bytes;
    tfrecord_ = std::make_unique<TfRecordReader>(path_, record_options);
  } else {
    TarReaderOptions member_options;
    member_options.max_member_bytes = options_.max_record_bytes;
    member_options.step_over_large_members = true;
    TarSampleOptions sample_options;
    sample_options.required = options_.required_parts;
    sample_options.max_sample_bytes = options_.max_record_bytes;
    tar_ = std::make_unique<TarSampleReader>(TarReader(path_, member_options), std::move(sample_options));
  }
}

ShardReader::~ShardReader() = default;
ShardReader::ShardReader(ShardReader&&) noexcept = default;
ShardReader& ShardReader::operator=(ShardReader&&) noexcept = default;

bool ShardReader::read(ShardRecord& record) {
  record.shard = shard_;
  if (tfrecord_) {
    record.key.clear();
    record.parts.clear();
    if (!tfrecord_->next(record.bytes)) return false;
    record.offset = tfrecord_->offset();
    return true;
  }
  TarSample sample;
  if (!tar_->next(sample)) return false;
  record.bytes.clear();
  record.key = std::move(sample.key);
  record.parts = std::move(sample.parts);
  record.offset = sample.offset;
  return true;
}

bool ShardReader::next(ShardRecord& record) {
  if (!options_.skip_bad_records) return read(record);
  // After a record it can step over, a reader stands at the next one and reads it; after an error
  // that lost its place, it throws the same error again without moving (both readers document this).
  // So a failed record counts as skipped once the next call does anything else.
  std::string failed;
  int64_t failed_at = -1;
  for (;;) {
    try {
      const bool got = read(record);
      if (!failed.empty()) skipped_.note(std::move(failed));
      return got;
    } catch (const std::invalid_argument& e) {
      if (!failed.empty() && failed == e.what() && position() == failed_at) throw;
      if (!failed.empty()) skipped_.note(std::move(failed));
      failed = e.what();
      failed_at = position();
    }
  }
}

int64_t ShardReader::position() const { return tfrecord_ ? tfrecord_->position() : tar_->position(); }

void ShardReader::seek(int64_t offset) {
  if (tfrecord_) {
    tfrecord_->seek(offset);
  } else {
    tar_->seek(offset);
  }
}

int64_t count_records(const std::string& path, const ShardReaderOptions& options) {
  ShardReader reader(path, options);
  ShardRecord record;
  int64_t records = 0;
  while (reader.next(record)) ++records;
  return records;
}

// ---- skipped records ----

void SkippedRecords::note(std::string reason) {
  ++count;
  if (recent.size() == kRecentReasons) recent.erase(recent.begin());
  recent.push_back(std::move(reason));
}

void SkippedRecords::take(const SkippedRecords& from, int64_t before) {
  const int64_t added = from.count - before;
  const auto known = std::min<std::size_t>(static_cast<std::size_t>(added), from.recent.size());
  for (std::size_t i = from.recent.size() - known; i < from.recent.size(); ++i) note(from.recent[i]);
  count += added - static_cast<int64_t>(known);
}

// ---- shard lists ----

std::vector<std::string> list_shards(const std::string& pattern) {
  glob_t found{};
  const int rc = glob(pattern.c_str(), GLOB_NOSORT, nullptr, &found);  // glob sorts by locale: sorted below
  std::vector<std::string> shards;
  if (rc == 0) {
    for (std::size_t i = 0; i < found.gl_pathc; ++i) {
      struct stat info {};
      const bool there = stat(found.gl_pathv[i], &info) == 0;
      if (there && S_ISDIR(info.st_mode)) continue;
      if (there && !S_ISREG(info.st_mode)) {  // a FIFO or a device would block the reader, or never end
        const std::string shard = found.gl_pathv[i];
        globfree(&found);
        throw std::invalid_argument("shard " + shard + " (matched by '" + pattern + "') is a " +
                                    (S_ISFIFO(info.st_mode) ? "FIFO" : S_ISSOCK(info.st_mode) ? "socket" : "device") +
                                    ", not a regular file (a shard is read from its start at every epoch)");
      }
      shards.emplace_back(found.gl_pathv[i]);
    }
  }
  globfree(&found);
  if (rc != 0 && rc != GLOB_NOMATCH) {
    throw std::runtime_error("cannot list the shard files matching '" + pattern + "' (glob(3) failed: " +
                             (rc == GLOB_NOSPACE ? "out of memory" : "a directory could not be read") + ")");
  }
  if (shards.empty()) {
    throw std::invalid_argument("no shard file matches '" + pattern +
                                "' (expected a glob pattern of record files, as 'data/train-*.tfrecord')");
  }
  std::sort(shards.begin(), shards.end());
  return shards;
}

std::vector<std::string> assign_shards(const std::vector<std::string>& shards, int64_t rank, int64_t world_size) {
  if (world_size < 1) throw std::invalid_argument("world size must be >= 1, got " + std::to_string(world_size));
  if (rank < 0 || rank >= world_size) {
    throw std::invalid_argument("rank " + std::to_string(rank) + " outside a world of " + std::to_string(world_size));
  }
  if (static_cast<int64_t>(shards.size()) < world_size) {
    throw std::invalid_argument(counted(shards.size(), "shard") + " for " +
                                counted(static_cast<std::size_t>(world_size), "rank") +
                                ": each rank needs at least one shard (write more shards, or run fewer ranks)");
  }
  std::vector<std::string> mine;
  for (auto i = static_cast<std::size_t>(rank); i < shards.size(); i += static_cast<std::size_t>(world_size)) {
    mine.push_back(shards[i]);
  }
  return mine;
}

// ---- StreamPosition ----

std::string StreamPosition::encode() const {
  std::string text = std::string(kPositionMagic) + " " + std::to_string(kVersion) + " seed=" + std::to_string(seed) +
                     " shards=" + std::to_string(shards) + " shuffle_buffer=" + std::to_string(shuffle_buffer) +
                     " epoch=" + std::to_string(epoch) + " shard_index=" + std::to_string(shard_index) +
                     " shard_position=" + std::to_string(shard_position) + " draws=" + std::to_string(draws) +
                     " skipped=" + std::to_string(skipped) + " buffer=" + std::to_string(buffer.size());
  for (const BufferedRecord& record : buffer) {
    text += " " + std::to_string(record.shard) + ":" + std::to_string(record.offset);
  }
  return text;
}

StreamPosition StreamPosition::decode(const std::string& text) {
  const auto fail = [&](const std::string& what) {
    const std::string excerpt = text.size() > 80 ? text.substr(0, 80) + "..." : text;
    throw std::invalid_argument("cannot decode a shard stream position: " + what + " (the text: '" + excerpt + "')");
  };
  std::vector<std::string_view> tokens;
  for (std::size_t p = 0; p < text.size();) {
    const std::size_t begin = text.find_first_not_of(" \t\r\n", p);
    if (begin == std::string::npos) break;
    const std::size_t end = std::min(text.find_first_of(" \t\r\n", begin), text.size());
    tokens.emplace_back(text.data() + begin, end - begin);
    p = end;
  }
  if (tokens.empty() || tokens[0] != kPositionMagic) {
    fail(std::string("it does not start with '") + kPositionMagic + "'");
  }
  int64_t version = 0;
  if (tokens.size() < 2 || !parse_number(tokens[1], version)) fail("no version number after the first word");
  if (version != kVersion) {
    fail("version " + std::to_string(version) + ", this build reads version " + std::to_string(kVersion));
  }
  std::size_t at = 2;
  const auto field = [&](const char* name, auto& value) {
    const std::string prefix = std::string(name) + "=";
    if (at >= tokens.size()) fail("it ends before the field '" + prefix + "'");
    const std::string_view token = tokens[at++];
    if (token.substr(0, prefix.size()) != prefix) {
      fail("expected the field '" + prefix + "' as word " + std::to_string(at) + ", found '" + std::string(token) +
           "'");
    }
    if (!parse_number(token.substr(prefix.size()), value)) {
      fail("'" + std::string(token) + "' is not a non-negative integer that fits");
    }
  };
  StreamPosition position;
  field("seed", position.seed);
  field("shards", position.shards);
  field("shuffle_buffer", position.shuffle_buffer);
  field("epoch", position.epoch);
  field("shard_index", position.shard_index);
  field("shard_position", position.shard_position);
  field("draws", position.draws);
  field("skipped", position.skipped);
  std::size_t buffered = 0;
  field("buffer", buffered);
  if (tokens.size() - at != buffered) {
    fail("buffer=" + std::to_string(buffered) + " but " + std::to_string(tokens.size() - at) +
         " buffered records follow");
  }
  if (position.shards < 1) fail("shards=0 (a stream has at least one shard)");
  if (position.shard_index > position.shards) {
    fail("shard_index=" + std::to_string(position.shard_index) + " is past the " + std::to_string(position.shards) +
         " shards");
  }
  if (buffered > buffer_capacity(position.shuffle_buffer)) {
    fail(std::to_string(buffered) + " buffered records, more than shuffle_buffer=" +
         std::to_string(position.shuffle_buffer) + " holds");
  }
  for (; at < tokens.size(); ++at) {
    const std::string_view token = tokens[at];
    const std::size_t colon = token.find(':');
    BufferedRecord record;
    if (colon == std::string_view::npos || !parse_number(token.substr(0, colon), record.shard) ||
        !parse_number(token.substr(colon + 1), record.offset)) {
      fail("the buffered record '" + std::string(token) + "' is not SHARD:OFFSET (two non-negative integers)");
    }
    if (record.shard >= position.shards) {
      fail("the buffered record '" + std::string(token) + "' names shard " + std::to_string(record.shard) + " of " +
           std::to_string(position.shards) + " (expected 0 to " + std::to_string(position.shards - 1) + ")");
    }
    position.buffer.push_back(record);
  }
  return position;
}

// ---- ShardStream ----

namespace {

/// Why a position's record no longer reads at `offset` of `path`: the file changed after the position
/// was taken (a backup's), which is not the same as a corrupt file.
std::string changed_since(const std::string& path, int64_t offset, const std::string& what) {
  return path + " changed since the position was taken (the backup's): at byte offset " + std::to_string(offset) +
         ", where it held a record, " + what + " (expected the shards as they were when the backup was written)";
}

}  // namespace

ShardStream::ShardStream(std::vector<std::string> shards, ShardStreamOptions options)
    : shards_(std::move(shards)), options_(std::move(options)), capacity_(buffer_capacity(options_.shuffle_buffer)) {
  if (shards_.empty()) throw std::invalid_argument("a shard stream needs at least one shard file, got none");
  if (options_.shuffle_buffer < 0) {
    throw std::invalid_argument("ShardStreamOptions::shuffle_buffer must be >= 0 (0 or 1: no shuffle), got " +
                                std::to_string(options_.shuffle_buffer));
  }
  if (options_.shuffle_buffer_bytes < 0) {
    throw std::invalid_argument("ShardStreamOptions::shuffle_buffer_bytes must be >= 0 (0: no byte budget), got " +
                                std::to_string(options_.shuffle_buffer_bytes));
  }
  check_reader_options(options_.reader);
  set_epoch(0);
}

ShardStream::~ShardStream() = default;
ShardStream::ShardStream(ShardStream&&) noexcept = default;
ShardStream& ShardStream::operator=(ShardStream&&) noexcept = default;

void ShardStream::set_epoch(int64_t epoch) {
  if (epoch < 0) throw std::invalid_argument("a shard stream's epoch must be >= 0, got " + std::to_string(epoch));
  order_ = shard_order_of(shards_.size(), options_, epoch);
  epoch_ = epoch;
  shard_index_ = 0;
  shard_position_ = 0;
  reader_.reset();
  draws_ = 0;
  buffer_.clear();
  buffer_bytes_ = 0;
}

bool ShardStream::read_into_buffer() {
  ShardRecord record;  // moved in once read whole: a record that failed never enters the buffer
  while (shard_index_ < order_.size()) {
    if (!reader_) {
      const int64_t shard = order_[shard_index_];
      reader_ = std::make_unique<ShardReader>(shards_[static_cast<std::size_t>(shard)], options_.reader, shard);
      if (shard_position_ != 0) reader_->seek(shard_position_);
    }
    const int64_t skipped_before = reader_->skipped().count;
    bool got = false;
    try {
      got = reader_->next(record);
    } catch (...) {
      // the stream stands where its reader does: past a record the reader could step over
      shard_position_ = reader_->position();
      skipped_.take(reader_->skipped(), skipped_before);
      throw;
    }
    skipped_.take(reader_->skipped(), skipped_before);
    if (got) {
      if (options_.compact) options_.compact(record);
      shard_position_ = reader_->position();
      buffer_bytes_ += record_bytes(record);
      buffer_.push_back(std::move(record));
      return true;
    }
    reader_.reset();
    ++shard_index_;
    shard_position_ = 0;
  }
  return false;
}

bool ShardStream::next(ShardRecord& record) {
  // tf.data's shuffle: top the buffer up, hand out a uniformly drawn slot, move the last record into it
  const auto has_room = [this] {
    return buffer_.size() < capacity_ &&
           (buffer_.empty() || options_.shuffle_buffer_bytes == 0 || buffer_bytes_ < options_.shuffle_buffer_bytes);
  };
  while (has_room() && read_into_buffer()) {
  }
  if (buffer_.empty()) return false;
  std::size_t slot = 0;
  if (buffer_.size() > 1) {
    // unbiased enough for buffers below 2^32 records (bias below 2^-32), as seeded_permutation
    slot = static_cast<std::size_t>(sample_bits(options_.seed, epoch_, draws_, kDrawStream) % buffer_.size());
  }
  record = std::move(buffer_[slot]);
  buffer_bytes_ -= record_bytes(record);
  if (slot + 1 != buffer_.size()) buffer_[slot] = std::move(buffer_.back());
  buffer_.pop_back();
  ++draws_;
  return true;
}

StreamPosition ShardStream::position() const {
  StreamPosition position;
  position.seed = options_.seed;
  position.shards = static_cast<int64_t>(shards_.size());
  position.shuffle_buffer = options_.shuffle_buffer;
  position.epoch = epoch_;
  position.shard_index = static_cast<int64_t>(shard_index_);
  position.shard_position = shard_position_;
  position.draws = draws_;
  position.skipped = skipped_.count;
  position.buffer.reserve(buffer_.size());
  for (const ShardRecord& record : buffer_) position.buffer.push_back({record.shard, record.offset});
  return position;
}

void ShardStream::restore(const StreamPosition& position) {
  const auto refuse = [](const std::string& what) {
    throw std::invalid_argument("cannot restore the shard stream: " + what);
  };
  const auto differs = [&](const char* name, const std::string& theirs, const std::string& ours) {
    refuse("the position was taken from a stream with " + std::string(name) + " " + theirs + ", this one has " + ours +
           " (the records would not be the same)");
  };
  if (position.seed != options_.seed) differs("seed", std::to_string(position.seed), std::to_string(options_.seed));
  if (position.shards != static_cast<int64_t>(shards_.size())) {
    differs("shards", std::to_string(position.shards), std::to_string(shards_.size()));
  }
  if (buffer_capacity(position.shuffle_buffer) != capacity_) {
    differs("shuffle_buffer", std::to_string(position.shuffle_buffer), std::to_string(options_.shuffle_buffer));
  }
  if (position.epoch < 0 || position.draws < 0 || position.skipped < 0 || position.shard_position < 0 ||
      position.shard_index < 0 || position.shard_index > position.shards || position.buffer.size() > capacity_) {
    refuse("the position is out of range (" + position.encode() + ")");
  }
  std::vector<int64_t> order = shard_order_of(shards_.size(), options_, position.epoch);

  // The buffered records read again: each shard opened once and read forward in offset order (a gzip
  // shard only goes back by inflating from its start).
  std::vector<std::size_t> by_file(position.buffer.size());
  std::iota(by_file.begin(), by_file.end(), std::size_t{0});
  std::sort(by_file.begin(), by_file.end(), [&](std::size_t a, std::size_t b) {
    const auto& x = position.buffer[a];
    const auto& y = position.buffer[b];
    return x.shard != y.shard ? x.shard < y.shard : x.offset < y.offset;
  });
  std::vector<ShardRecord> buffer(position.buffer.size());
  std::unique_ptr<ShardReader> reader;
  int64_t reader_shard = -1;
  for (const std::size_t slot : by_file) {
    const StreamPosition::BufferedRecord& wanted = position.buffer[slot];
    if (wanted.shard < 0 || wanted.shard >= position.shards || wanted.offset < 0) {
      refuse("the buffered record " + std::to_string(wanted.shard) + ":" + std::to_string(wanted.offset) +
             " is out of range");
    }
    const std::string& path = shards_[static_cast<std::size_t>(wanted.shard)];
    ShardRecord& record = buffer[slot];
    bool found = false;
    try {
      if (reader_shard != wanted.shard) {
        reader = std::make_unique<ShardReader>(path, options_.reader, wanted.shard);
        reader_shard = wanted.shard;
      }
      reader->seek(wanted.offset);
      found = reader->next(record) && record.offset == wanted.offset;
    } catch (const std::invalid_argument& e) {  // what reads as corrupt there now is a file that changed
      reader.reset();
      reader_shard = -1;
      refuse(changed_since(path, wanted.offset, e.what()));
    }
    if (!found) refuse(changed_since(path, wanted.offset, "no record starts there any more"));
    if (options_.compact) options_.compact(record);
  }
  std::unique_ptr<ShardReader> current;
  if (static_cast<std::size_t>(position.shard_index) < order.size() && position.shard_position != 0) {
    const int64_t shard = order[static_cast<std::size_t>(position.shard_index)];
    const std::string& path = shards_[static_cast<std::size_t>(shard)];
    try {
      // the record the stream reads next must still read where the position stands: read once, then
      // the reader is put back there
      current = std::make_unique<ShardReader>(path, options_.reader, shard);
      current->seek(position.shard_position);
      ShardRecord next;
      current->next(next);
      current->seek(position.shard_position);
    } catch (const std::invalid_argument& e) {
      refuse(changed_since(path, position.shard_position, e.what()));
    }
  }

  epoch_ = position.epoch;
  order_ = std::move(order);
  shard_index_ = static_cast<std::size_t>(position.shard_index);
  shard_position_ = position.shard_position;
  reader_ = std::move(current);
  draws_ = position.draws;
  buffer_ = std::move(buffer);
  buffer_bytes_ = 0;
  for (const ShardRecord& record : buffer_) buffer_bytes_ += record_bytes(record);
  skipped_.count = position.skipped;
  skipped_.recent.clear();
}

}  // namespace fitscope
