#include "fitscope/data/formats/tfrecord_format.hpp"
#include "read_in_pieces.hpp"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <istream>
#include <ostream>
#include <stdexcept>

namespace fitscope {
namespace {

constexpr std::size_t kHeaderBytes = 12;  // uint64 length, uint32 masked CRC-32C of the length
constexpr std::size_t kFooterBytes = 4;   // uint32 masked CRC-32C of the data
constexpr std::size_t kChunk = std::size_t{1} << 16;

// CRC-32C by "slicing by 8" (eight bytes per step through eight tables, Intel's method): table 0 is
// the byte-at-a-time table of the reflected Castagnoli polynomial, table k the CRC of a byte followed
// by k zero bytes
using CrcTables = std::array<std::array<uint32_t, 256>, 8>;
constexpr CrcTables kCrcTables = [] {
  CrcTables t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0x82F63B78u ^ (c >> 1) : c >> 1;
    t[0][i] = c;
  }
  for (std::size_t k = 1; k < 8; ++k) {
    for (std::size_t i = 0; i < 256; ++i) t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xFF];
  }
  return t;
}();

uint64_t little_endian(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

void put_little_endian(char* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
}

uint32_t masked_crc(std::string_view bytes) { return mask_crc32c(crc32c_extend(0, bytes)); }

std::string hex32(uint32_t v) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08x", v);
  return text;
}

bool is_record_header(std::string_view head) {
  return head.size() >= kHeaderBytes &&
         little_endian(head.data() + 8, 4) == masked_crc(head.substr(0, 8));
}

bool has_gzip_magic(std::string_view head) {
  return head.size() >= 2 && static_cast<uint8_t>(head[0]) == 0x1f && static_cast<uint8_t>(head[1]) == 0x8b;
}

}  // namespace

uint32_t crc32c_extend(uint32_t crc, std::string_view bytes) {
  const auto& t = kCrcTables;
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  std::size_t n = bytes.size();
  uint32_t c = ~crc;
  for (; n >= 8; p += 8, n -= 8) {
    const uint32_t lo = c ^ (uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24);
    c = t[7][lo & 0xFF] ^ t[6][(lo >> 8) & 0xFF] ^ t[5][(lo >> 16) & 0xFF] ^ t[4][lo >> 24] ^ t[3][p[4]] ^
        t[2][p[5]] ^ t[1][p[6]] ^ t[0][p[7]];
  }
  for (; n > 0; ++p, --n) c = t[0][(c ^ *p) & 0xFF] ^ (c >> 8);
  return ~c;
}

uint32_t mask_crc32c(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xA282EAD8u; }

void write_tfrecord(std::ostream& out, std::string_view record) {
  char header[kHeaderBytes];
  put_little_endian(header, record.size(), 8);
  put_little_endian(header + 8, masked_crc(std::string_view(header, 8)), 4);
  char footer[kFooterBytes];
  put_little_endian(footer, masked_crc(record), 4);
  out.write(header, sizeof header);
  out.write(record.data(), static_cast<std::streamsize>(record.size()));
  out.write(footer, sizeof footer);
  if (!out) throw std::runtime_error("cannot write a TFRecord record (the stream failed)");
}

/// The reader's bytes: those of a stream (after `head`, bytes already read from it to tell its
/// format), inflated when gzip. Errors in the compressed bytes are std::invalid_argument without the
/// source's name (the reader adds it); an I/O error is std::runtime_error.
class TfRecordReader::Bytes {
 public:
  Bytes(std::istream& in, std::string head, bool gzip) : in_(in), head_(std::move(head)), gzip_(gzip) {
    if (!gzip_) return;
    if (inflateInit2(&z_, 16 + MAX_WBITS) != Z_OK) throw std::runtime_error("zlib cannot start inflating");
    compressed_ = std::make_unique<char[]>(kChunk);
  }
  ~Bytes() {
    if (gzip_) inflateEnd(&z_);
  }
  Bytes(const Bytes&) = delete;
  Bytes& operator=(const Bytes&) = delete;

  /// Up to `size` bytes into `out`; fewer only at the end of the stream.
  std::size_t read(char* out, std::size_t size) { return gzip_ ? inflated(out, size) : raw(out, size); }

 private:
  std::size_t raw(char* out, std::size_t size) {
    std::size_t got = std::min(size, head_.size() - head_at_);
    std::memcpy(out, head_.data() + head_at_, got);
    head_at_ += got;
    if (got < size && in_) {
      in_.read(out + got, static_cast<std::streamsize>(size - got));
      got += static_cast<std::size_t>(in_.gcount());
      if (in_.bad()) throw std::runtime_error(std::string("cannot read (") + std::strerror(errno) + ")");
    }
    raw_read_ += static_cast<int64_t>(got);
    return got;
  }

  std::size_t inflated(char* out, std::size_t size) {
    std::size_t got = 0;
    while (got < size) {
      if (z_.avail_in == 0 && !raw_end_) {
        const std::size_t n = raw(compressed_.get(), kChunk);
        raw_end_ = n < kChunk;
        z_.next_in = reinterpret_cast<Bytef*>(compressed_.get());
        z_.avail_in = static_cast<uInt>(n);
      }
      if (member_end_) {  // a gzip member ended: the stream ends too, or another member follows
        if (z_.avail_in == 0) {
          if (raw_end_) break;
          continue;
        }
        if (static_cast<uint8_t>(*z_.next_in) != 0x1f) {
          throw std::invalid_argument("unexpected bytes after the gzip data at compressed byte offset " +
                                      std::to_string(raw_read_ - static_cast<int64_t>(z_.avail_in)) +
                                      " (expected the end of the file or another gzip member)");
        }
        inflateReset(&z_);
        member_end_ = false;
      }
      z_.next_out = reinterpret_cast<Bytef*>(out + got);
      z_.avail_out = static_cast<uInt>(std::min(size - got, std::size_t{1} << 30));
      const uInt before = z_.avail_out;
      const int rc = inflate(&z_, Z_NO_FLUSH);
      got += before - z_.avail_out;
      if (rc == Z_STREAM_END) {
        member_end_ = true;
      } else if (rc == Z_BUF_ERROR && z_.avail_in == 0) {
        if (raw_end_) {
          throw std::invalid_argument("the gzip data ends early (truncated) at compressed byte offset " +
                                      std::to_string(raw_read_));
        }
      } else if (rc != Z_OK) {
        const std::string why = z_.msg ? z_.msg : "zlib error " + std::to_string(rc);
        throw std::invalid_argument("corrupt gzip data near compressed byte offset " +
                                    std::to_string(raw_read_ - static_cast<int64_t>(z_.avail_in)) + " (" + why + ")");
      }
    }
    return got;
  }

  std::istream& in_;
  std::string head_;
  std::size_t head_at_ = 0;
  int64_t raw_read_ = 0;
  bool gzip_;
  z_stream z_{};
  std::unique_ptr<char[]> compressed_;
  bool raw_end_ = false;
  bool member_end_ = false;
};

TfRecordReader::TfRecordReader(const std::string& path, TfRecordReaderOptions options)
    : source_(path), options_(options), path_(path) {
  open();
}

TfRecordReader::TfRecordReader(std::istream& in, std::string source, TfRecordReaderOptions options,
                               int64_t first_offset)
    : source_(std::move(source)), options_(options), in_(&in), first_offset_(first_offset) {
  open();
}

TfRecordReader::~TfRecordReader() = default;
TfRecordReader::TfRecordReader(TfRecordReader&&) noexcept = default;
TfRecordReader& TfRecordReader::operator=(TfRecordReader&&) noexcept = default;

void TfRecordReader::open() {
  if (!path_.empty()) {
    bytes_.reset();
    auto file = std::make_unique<std::ifstream>(path_, std::ios::binary);
    if (!*file) throw std::invalid_argument(path_ + ": cannot open (" + std::strerror(errno) + ")");
    file_ = std::move(file);
    in_ = file_.get();
  }
  // the first bytes tell the format: a valid record header is a TFRecord even when its length happens
  // to start with gzip's magic (a record of 0x8b1f + k * 65536 bytes)
  std::string head(kHeaderBytes, '\0');
  in_->read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in_->gcount()));
  if (in_->bad()) throw std::runtime_error(source_ + ": cannot read (" + std::strerror(errno) + ")");
  switch (options_.compression) {
    case TfRecordCompression::kNone: gzip_ = false; break;
    case TfRecordCompression::kGzip: gzip_ = true; break;
    case TfRecordCompression::kAuto: gzip_ = has_gzip_magic(head) && !is_record_header(head); break;
  }
  bytes_ = std::make_unique<Bytes>(*in_, std::move(head), gzip_);
  position_ = first_offset_;
  record_offset_ = -1;
  records_ = 0;
  done_ = false;
  error_.clear();
}

std::size_t TfRecordReader::read(char* out, std::size_t size) {
  std::size_t got = 0;
  try {
    got = bytes_->read(out, size);
  } catch (const std::invalid_argument& e) {
    fail(reading_, e.what(), true);
  } catch (const std::exception& e) {
    error_ = source_ + ": " + e.what();
    throw std::runtime_error(error_);
  }
  position_ += static_cast<int64_t>(got);
  return got;
}

uint64_t TfRecordReader::discard(uint64_t size) {
  char dropped[kChunk];
  uint64_t got = 0;
  while (got < size) {
    const auto want = static_cast<std::size_t>(std::min<uint64_t>(size - got, kChunk));
    const std::size_t n = read(dropped, want);
    got += n;
    if (n < want) break;
  }
  return got;
}

void TfRecordReader::fail(int64_t offset, const std::string& what, bool framing_lost) {
  std::string message = source_ + ": the record at " + (gzip_ ? "uncompressed " : "") + "byte offset " +
                        std::to_string(offset) + ": " + what;
  if (framing_lost) error_ = message;
  throw std::invalid_argument(message);
}

bool TfRecordReader::next(std::string& record) {
  if (!error_.empty()) throw std::invalid_argument(error_);
  if (done_) return false;
  const int64_t at = reading_ = position_;
  char header[kHeaderBytes];
  const std::size_t got = read(header, kHeaderBytes);
  if (got == 0) {
    done_ = true;
    return false;
  }
  if (got < kHeaderBytes) {
    fail(at, "the stream ends inside the record's 12-byte header (" + std::to_string(got) +
                 " bytes there): the file is truncated", true);
  }
  const uint64_t length = little_endian(header, 8);
  const auto length_crc = static_cast<uint32_t>(little_endian(header + 8, 4));
  const uint32_t expected_length_crc = masked_crc(std::string_view(header, 8));
  if (length_crc != expected_length_crc) {
    fail(at, "the length's CRC (at byte offset " + std::to_string(at + 8) + ") is " + hex32(length_crc) +
                 ", expected " + hex32(expected_length_crc) + ", the masked CRC-32C of the length bytes (which read " +
                 std::to_string(length) + "): the record is corrupt, or this is not a TFRecord file" +
                 (options_.compression == TfRecordCompression::kNone ? "" : " (nor a gzip one)"), true);
  }
  if (length > static_cast<uint64_t>(options_.max_record_bytes)) {
    // stepped over, never held: the reader then stands at the next record (a gzip bomb costs inflating
    // time, bounded by the file's size, and no memory)
    const std::string over = "the record declares " + std::to_string(length) + " data bytes, more than " +
                             "TfRecordReaderOptions::max_record_bytes (" + std::to_string(options_.max_record_bytes) + ")";
    if (const uint64_t there = discard(length + kFooterBytes); there < length + kFooterBytes) {
      fail(at, over + ", and the stream ends inside them (" + std::to_string(there) + " bytes there, with the data's CRC): "
                      "the file is truncated", true);
    }
    fail(at, over + ": stepped over, not read", false);
  }
  // the data in pieces: a declared length the stream does not hold never becomes an allocation
  const auto size = static_cast<std::size_t>(length);
  const std::size_t held = detail::read_in_pieces(record, size, [this](char* to, std::size_t n) { return read(to, n); });
  if (held < size) {
    fail(at, "the stream ends inside the record's data (" + std::to_string(length) + " bytes declared, " +
                 std::to_string(held) + " there): the file is truncated", true);
  }
  char footer[kFooterBytes];
  const std::size_t footer_got = read(footer, kFooterBytes);
  if (footer_got < kFooterBytes) {
    fail(at, "the stream ends inside the data's 4-byte CRC (at byte offset " + std::to_string(at + 12 + size) +
                 ", " + std::to_string(footer_got) + " bytes there): the file is truncated", true);
  }
  const auto data_crc = static_cast<uint32_t>(little_endian(footer, 4));
  const uint32_t expected_data_crc = masked_crc(record);
  if (data_crc != expected_data_crc) {
    // the framing holds: the reader stands at the next record, and a caller may skip this one
    fail(at, "the data's CRC (at byte offset " + std::to_string(at + 12 + size) + ") is " + hex32(data_crc) +
                 ", expected " + hex32(expected_data_crc) + ", the masked CRC-32C of its " + std::to_string(length) +
                 " data bytes: the record is corrupt", false);
  }
  record_offset_ = at;
  ++records_;
  return true;
}

void TfRecordReader::seek(int64_t offset) {
  if (offset < first_offset_) {
    throw std::invalid_argument(source_ + ": cannot seek to byte offset " + std::to_string(offset) +
                                " (the stream starts at " + std::to_string(first_offset_) + ")");
  }
  if (offset < position_ || !error_.empty()) {
    if (path_.empty()) {
      throw std::logic_error(source_ + ": a borrowed stream cannot be read again (seek to byte offset " +
                             std::to_string(offset) + " at " + std::to_string(position_) +
                             (error_.empty() ? ")" : ", after an error)"));
    }
    open();
  }
  if (!path_.empty() && !gzip_ && offset > position_) {  // a plain file: seek on disk
    in_->clear();
    in_->seekg(0, std::ios::end);
    const auto size = static_cast<int64_t>(in_->tellg());
    if (offset > size) {
      throw std::invalid_argument(source_ + ": cannot seek to byte offset " + std::to_string(offset) + " (the file has " +
                                  std::to_string(size) + " bytes)");
    }
    in_->seekg(offset);
    if (!*in_) throw std::runtime_error(source_ + ": cannot seek to byte offset " + std::to_string(offset));
    bytes_ = std::make_unique<Bytes>(*in_, std::string(), false);
    position_ = offset;
  }
  reading_ = position_;
  const auto ahead = static_cast<uint64_t>(std::max<int64_t>(offset - position_, 0));
  if (discard(ahead) < ahead) {
    throw std::invalid_argument(source_ + ": cannot seek to " + (gzip_ ? "uncompressed " : "") + "byte offset " +
                                std::to_string(offset) + " (the stream ends at " + std::to_string(position_) + ")");
  }
  record_offset_ = -1;
  records_ = 0;
  done_ = false;
}

}  // namespace fitscope
