#include "fitscope/data/formats/tar_format.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <istream>
#include <limits>
#include <ostream>
#include <stdexcept>

#include "quoted_bytes.hpp"
#include "read_in_pieces.hpp"

namespace fitscope {
namespace {

constexpr std::size_t kBlock = 512;
constexpr std::size_t kSkipChunk = std::size_t{1} << 16;

// the fields of a header (offset, length), POSIX ustar's layout
constexpr std::size_t kName = 0, kNameLength = 100;
constexpr std::size_t kSize = 124, kSizeLength = 12;
constexpr std::size_t kChecksum = 148, kChecksumLength = 8;
constexpr std::size_t kTypeflag = 156;
constexpr std::size_t kMagic = 257;
constexpr std::size_t kPrefix = 345, kPrefixLength = 155;

/// A header field: its bytes up to the first NUL.
std::string_view field(const char* header, std::size_t at, std::size_t length) {
  const std::string_view all(header + at, length);
  return all.substr(0, std::min(all.find('\0'), all.size()));
}

/// A numeric field: octal digits between optional leading spaces and trailing spaces or NULs (empty
/// reads 0), or GNU's base-256 (first byte 0x80, then the number big-endian). std::nullopt when it is
/// neither, negative, or beyond int64.
std::optional<uint64_t> parse_number(std::string_view bytes) {
  if (!bytes.empty() && static_cast<unsigned char>(bytes[0]) & 0x80) {
    if (static_cast<unsigned char>(bytes[0]) != 0x80) return std::nullopt;  // 0xff: negative
    uint64_t v = 0;
    for (std::size_t i = 1; i < bytes.size(); ++i) {
      if (v >> 55) return std::nullopt;
      v = (v << 8) | static_cast<unsigned char>(bytes[i]);
    }
    if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return v;
  }
  std::size_t i = 0;
  while (i < bytes.size() && bytes[i] == ' ') ++i;
  uint64_t v = 0;
  for (; i < bytes.size() && bytes[i] >= '0' && bytes[i] <= '7'; ++i) {
    if (v >> 60) return std::nullopt;
    v = v * 8 + static_cast<uint64_t>(bytes[i] - '0');
  }
  for (; i < bytes.size(); ++i) {
    if (bytes[i] != ' ' && bytes[i] != '\0') return std::nullopt;
  }
  return v;
}

/// The checksums of a header: the sum of its bytes with the checksum field counted as spaces, unsigned
/// (POSIX) and signed (what old tars computed on platforms with a signed char).
std::pair<int64_t, int64_t> checksums(const char* header) {
  int64_t unsigned_sum = 0, signed_sum = 0;
  for (std::size_t i = 0; i < kBlock; ++i) {
    const bool in_field = i >= kChecksum && i < kChecksum + kChecksumLength;
    unsigned_sum += in_field ? ' ' : static_cast<unsigned char>(header[i]);
    signed_sum += in_field ? ' ' : static_cast<signed char>(header[i]);
  }
  return {unsigned_sum, signed_sum};
}

bool is_zero_block(const char* block) {
  return std::all_of(block, block + kBlock, [](char c) { return c == '\0'; });
}

uint64_t padding(uint64_t size) { return (kBlock - size % kBlock) % kBlock; }

void put_octal(char* out, std::size_t length, uint64_t value) {  // length - 1 digits, then a NUL
  for (std::size_t i = length - 1; i-- > 0; value /= 8) out[i] = static_cast<char>('0' + value % 8);
  out[length - 1] = '\0';
}

}  // namespace

void write_tar_member(std::ostream& out, std::string_view name, std::string_view bytes) {
  const auto refuse = [&](const std::string& why) {
    throw std::invalid_argument("cannot write the tar member " + detail::quoted_bytes(name) + ": " + why);
  };
  if (name.empty()) refuse("a member needs a name");
  if (name.find('\0') != std::string_view::npos) refuse("a name cannot hold a NUL byte");
  if (name.back() == '/') refuse("a name ending with '/' reads as a directory");
  std::string_view prefix;
  std::string_view rest = name;
  if (name.size() > kNameLength) {
    // the longest prefix up to a '/' that fits the prefix field, as Python's tarfile splits
    const std::size_t slash = name.rfind('/', kPrefixLength);
    if (slash == std::string_view::npos || slash == 0 || name.size() - slash - 1 > kNameLength) {
      refuse("a ustar header holds a name of up to 100 bytes, or one split at a '/' into up to 155 and up to "
             "100 bytes (this one has " + std::to_string(name.size()) + " bytes)");
    }
    prefix = name.substr(0, slash);
    rest = name.substr(slash + 1);
  }
  if (bytes.size() >= (uint64_t{1} << 33)) {
    refuse(std::to_string(bytes.size()) + " bytes is more than a ustar header's size field holds (8 GiB - 1)");
  }
  char header[kBlock] = {};
  std::memcpy(header + kName, rest.data(), rest.size());
  std::memcpy(header + 100, "0000644", 8);  // mode
  std::memcpy(header + 108, "0000000", 8);  // uid
  std::memcpy(header + 116, "0000000", 8);  // gid
  put_octal(header + kSize, kSizeLength, bytes.size());
  put_octal(header + 136, 12, 0);  // mtime
  header[kTypeflag] = '0';
  std::memcpy(header + kMagic, "ustar\0" "00", 8);
  if (!prefix.empty()) std::memcpy(header + kPrefix, prefix.data(), prefix.size());
  char checksum[kChecksumLength];
  std::snprintf(checksum, sizeof checksum, "%06o", static_cast<unsigned>(checksums(header).first));
  std::memcpy(header + kChecksum, checksum, 7);  // six digits, a NUL,
  header[kChecksum + 7] = ' ';                    // and a space, as tar writes it
  const char zeros[kBlock] = {};
  out.write(header, kBlock);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.write(zeros, static_cast<std::streamsize>(padding(bytes.size())));
  if (!out) throw std::runtime_error("cannot write a tar member (the stream failed)");
}

void finish_tar(std::ostream& out) {
  const char zeros[2 * kBlock] = {};
  out.write(zeros, sizeof zeros);
  if (!out) throw std::runtime_error("cannot end a tar archive (the stream failed)");
}

TarReader::TarReader(const std::string& path, TarReaderOptions options)
    : source_(path), options_(options), path_(path) {
  open();
}

TarReader::TarReader(std::istream& in, std::string source, TarReaderOptions options, int64_t first_offset)
    : source_(std::move(source)), options_(options), in_(&in), first_offset_(first_offset) {
  open();
}

TarReader::~TarReader() = default;
TarReader::TarReader(TarReader&&) noexcept = default;
TarReader& TarReader::operator=(TarReader&&) noexcept = default;

void TarReader::open() {
  if (!path_.empty()) {
    auto file = std::make_unique<std::ifstream>(path_, std::ios::binary);
    if (!*file) throw std::invalid_argument(path_ + ": cannot open (" + std::strerror(errno) + ")");
    file_ = std::move(file);
    in_ = file_.get();
  }
  position_ = first_offset_;
  member_offset_ = -1;
  data_offset_ = -1;
  members_ = 0;
  done_ = false;
  error_.clear();
}

std::size_t TarReader::read(char* out, std::size_t size) {
  std::size_t got = 0;
  if (size > 0 && *in_) {
    in_->read(out, static_cast<std::streamsize>(size));
    got = static_cast<std::size_t>(in_->gcount());
    if (in_->bad()) {
      error_ = source_ + ": cannot read at byte offset " + std::to_string(position_) + " (" + std::strerror(errno) + ")";
      throw std::runtime_error(error_);
    }
  }
  position_ += static_cast<int64_t>(got);
  return got;
}

void TarReader::fail(int64_t offset, const std::string& subject, const std::string& what) {
  error_ = source_ + ": " + subject + " at byte offset " + std::to_string(offset) + ": " + what;
  throw std::invalid_argument(error_);
}

void TarReader::skip(int64_t bytes, int64_t at, const std::string& subject, const std::string& what) {
  char buffer[kSkipChunk];
  for (int64_t left = bytes; left > 0;) {
    const auto want = static_cast<std::size_t>(std::min<int64_t>(left, static_cast<int64_t>(kSkipChunk)));
    const std::size_t got = read(buffer, want);
    left -= static_cast<int64_t>(got);
    if (got < want) {
      fail(at, subject, "the archive ends inside " + what + " (" + std::to_string(bytes) + " bytes, " +
                            std::to_string(bytes - left) + " there): the file is truncated");
    }
  }
}

std::string TarReader::read_extended(int64_t at, uint64_t size, const char* what) {
  const std::string subject = std::string("the ") + what + " header";
  if (size > static_cast<uint64_t>(options_.max_extended_header_bytes)) {
    fail(at, subject, "it declares " + std::to_string(size) + " data bytes, more than " +
                          "TarReaderOptions::max_extended_header_bytes (" +
                          std::to_string(options_.max_extended_header_bytes) + ")");
  }
  std::string data(static_cast<std::size_t>(size), '\0');  // bounded by the option
  const std::size_t got = read(data.data(), data.size());
  if (got < data.size()) {
    fail(at, subject, "the archive ends inside its data (" + std::to_string(size) + " bytes declared, " +
                          std::to_string(got) + " there): the file is truncated");
  }
  skip(static_cast<int64_t>(padding(size)), at, subject, "the padding after its data");
  return data;
}

bool TarReader::next(TarMember& member) {
  if (!error_.empty()) throw std::invalid_argument(error_);
  if (done_) return false;
  int64_t first = -1;                // the member's first header (an 'L' or 'x' one, or its own)
  std::optional<std::string> long_name, pax_path;
  uint64_t pax_size = 0;
  bool has_pax_size = false;
  char header[kBlock];
  for (;;) {
    const int64_t at = position_;
    const std::size_t got = read(header, kBlock);
    if (got == 0 || (got == kBlock && is_zero_block(header))) {
      if (first >= 0) {
        fail(first, "the extended header", std::string("the archive ends (") + (got == 0 ? "the file" : "a zero block") +
                                               " at byte offset " + std::to_string(at) +
                                               ") before the entry it describes");
      }
      position_ = at;  // where the end is; the ending blocks are not read
      done_ = true;
      return false;
    }
    if (got < kBlock) {
      fail(at, "the header", "the archive ends inside this 512-byte header (" + std::to_string(got) +
                                 " bytes there): the file is truncated");
    }
    const std::string_view checksum_field(header + kChecksum, kChecksumLength);
    const std::optional<uint64_t> stored = parse_number(checksum_field);
    const auto [unsigned_sum, signed_sum] = checksums(header);
    if (!stored || (static_cast<int64_t>(*stored) != unsigned_sum && static_cast<int64_t>(*stored) != signed_sum)) {
      fail(at, "the header", "its checksum field (at byte offset " + std::to_string(at + static_cast<int64_t>(kChecksum)) + ") reads " +
                                 detail::quoted_bytes(checksum_field) + (stored ? " (" + std::to_string(*stored) + ")" : " (not an octal number)") +
                                 ", expected " + std::to_string(unsigned_sum) +
                                 " (the sum of the header's bytes with that field as spaces; " +
                                 std::to_string(signed_sum) + " summed as signed bytes): the archive is corrupt, or "
                                 "this is not a tar file");
    }
    const std::string_view size_field(header + kSize, kSizeLength);
    const std::optional<uint64_t> header_size = parse_number(size_field);
    if (!header_size) {
      fail(at, "the header", "its size field (at byte offset " + std::to_string(at + static_cast<int64_t>(kSize)) + ") reads " +
                                 detail::quoted_bytes(size_field) + ", expected octal digits or a positive base-256 number");
    }
    const char type = header[kTypeflag];
    switch (type) {
      case 'L':  // GNU: the next entry's name
      case 'K': {  // GNU: the next entry's link name
        if (first < 0) first = at;
        std::string data = read_extended(at, *header_size, type == 'L' ? "GNU long name" : "GNU long link name");
        if (type == 'L') long_name = data.substr(0, std::min(data.find('\0'), data.size()));
        continue;
      }
      case 'x':  // pax: records for the next entry
      case 'g': {  // pax: global records (skipped)
        if (type == 'x' && first < 0) first = at;
        const std::string data = read_extended(at, *header_size, type == 'x' ? "pax extended" : "pax global");
        if (type == 'g') continue;
        // records "LENGTH KEY=VALUE\n", LENGTH counting the whole record
        for (std::size_t p = 0; p < data.size();) {
          if (data.find_first_not_of('\0', p) == std::string::npos) break;  // padding some writers leave
          std::size_t length = 0, i = p;
          for (; i < data.size() && data[i] >= '0' && data[i] <= '9' && length < data.size(); ++i) {
            length = length * 10 + static_cast<std::size_t>(data[i] - '0');
          }
          const std::size_t equals = length > i - p && p + length <= data.size() ? data.find('=', i) : std::string::npos;
          if (i == p || i >= data.size() || data[i] != ' ' || equals == std::string::npos || equals >= p + length ||
              data[p + length - 1] != '\n') {
            fail(at, "the pax extended header", "its record at data byte " + std::to_string(p) + " (" +
                                                    detail::quoted_bytes(data.substr(p, 40)) +
                                                    ") is not 'LENGTH KEY=VALUE\\n' with LENGTH its size in bytes");
          }
          const std::string key = data.substr(i + 1, equals - i - 1);
          const std::string value = data.substr(equals + 1, p + length - 1 - equals - 1);
          if (key == "path") {
            if (value.find('\0') != std::string::npos) {
              fail(at, "the pax extended header", "its path " + detail::quoted_bytes(value) + " holds a NUL byte");
            }
            if (value.empty()) pax_path.reset(); else pax_path = value;
          } else if (key == "size") {
            uint64_t v = 0;
            bool ok = !value.empty() && value.size() <= 18;
            for (const char c : value) {
              ok = ok && c >= '0' && c <= '9';
              if (ok) v = v * 10 + static_cast<uint64_t>(c - '0');
            }
            if (!ok) fail(at, "the pax extended header", "its size " + detail::quoted_bytes(value) + " is not a decimal number of bytes");
            pax_size = v;
            has_pax_size = true;
          } else if (key.rfind("GNU.sparse.", 0) == 0) {
            fail(at, "the pax extended header", "it describes a GNU sparse file (" + key + "), which is not supported");
          }
          p += length;
        }
        continue;
      }
      default: break;
    }
    // an entry: its name, size and kind
    const uint64_t size = has_pax_size ? pax_size : *header_size;
    std::string name;
    if (pax_path) {
      name = *pax_path;
    } else if (long_name) {
      name = *long_name;
    } else {
      name = std::string(field(header, kName, kNameLength));
      const std::string_view prefix = field(header, kPrefix, kPrefixLength);
      if (std::memcmp(header + kMagic, "ustar\0", 6) == 0 && !prefix.empty()) name = std::string(prefix) + "/" + name;
    }
    const int64_t entry = first >= 0 ? first : at;
    const bool regular = type == '0' || type == '\0' || type == '7';
    if (type == 'S') fail(entry, "the member " + detail::quoted_bytes(name), "a GNU sparse file is not supported");
    if (!regular || (!name.empty() && name.back() == '/')) {
      // links, devices, directories and FIFOs have no data (whatever size they declare); other entries'
      // data is skipped
      const bool no_data = type >= '1' && type <= '6';
      if (!no_data) {
        if (size > static_cast<uint64_t>(std::numeric_limits<int64_t>::max() - kBlock)) {
          fail(entry, "the entry " + detail::quoted_bytes(name), "it declares " + std::to_string(size) + " data bytes, more than a file holds");
        }
        skip(static_cast<int64_t>(size + padding(size)), entry, "the entry " + detail::quoted_bytes(name), "its data and padding");
      }
      first = -1;
      long_name.reset();
      pax_path.reset();
      has_pax_size = false;
      continue;
    }
    const std::string subject = "the member " + detail::quoted_bytes(name);
    if (name.empty()) fail(entry, "the member", "a regular file without a name");
    const bool too_large = size > static_cast<uint64_t>(options_.max_member_bytes);
    if (too_large && (!options_.step_over_large_members || size > static_cast<uint64_t>(std::numeric_limits<int64_t>::max() - kBlock))) {
      fail(entry, subject, "it declares " + std::to_string(size) + " data bytes, more than " +
                               "TarReaderOptions::max_member_bytes (" + std::to_string(options_.max_member_bytes) + ")");
    }
    const int64_t data_at = position_;
    member.dropped_bytes = too_large ? static_cast<int64_t>(size) : 0;
    if (too_large) {  // stepped over, not held (step_over_large_members)
      member.bytes.clear();
      skip(static_cast<int64_t>(size), entry, subject, "its data");
    } else {
      // the data in pieces: a declared size the stream does not hold never becomes an allocation
      const std::size_t held = detail::read_in_pieces(member.bytes, static_cast<std::size_t>(size),
                                                     [this](char* to, std::size_t n) { return read(to, n); });
      if (held < static_cast<std::size_t>(size)) {
        member.bytes.clear();
        fail(entry, subject, "the archive ends inside its data (at byte offset " + std::to_string(data_at) + ", " +
                                 std::to_string(size) + " bytes declared, " + std::to_string(held) +
                                 " there): the file is truncated");
      }
    }
    skip(static_cast<int64_t>(padding(size)), entry, subject, "the padding after its data");
    member.name = std::move(name);
    member.offset = member_offset_ = entry;
    data_offset_ = data_at;
    ++members_;
    return true;
  }
}

void TarReader::seek(int64_t offset) {
  if (offset < first_offset_ || (offset - first_offset_) % static_cast<int64_t>(kBlock) != 0) {
    throw std::invalid_argument(source_ + ": cannot seek to byte offset " + std::to_string(offset) +
                                " (a header starts at a multiple of 512 bytes from " + std::to_string(first_offset_) + ")");
  }
  if (!path_.empty()) {
    open();
    in_->seekg(0, std::ios::end);
    const auto size = static_cast<int64_t>(in_->tellg());
    if (offset > size) {
      throw std::invalid_argument(source_ + ": cannot seek to byte offset " + std::to_string(offset) + " (the file has " +
                                  std::to_string(size) + " bytes)");
    }
    in_->seekg(offset);
    if (!*in_) throw std::runtime_error(source_ + ": cannot seek to byte offset " + std::to_string(offset));
    position_ = offset;
  } else {
    if (offset < position_ || !error_.empty()) {
      throw std::logic_error(source_ + ": a borrowed stream cannot be read again (seek to byte offset " +
                             std::to_string(offset) + " at " + std::to_string(position_) +
                             (error_.empty() ? ")" : ", after an error)"));
    }
    char buffer[kSkipChunk];
    while (position_ < offset) {
      const auto want = static_cast<std::size_t>(std::min<int64_t>(offset - position_, static_cast<int64_t>(kSkipChunk)));
      if (read(buffer, want) < want) {
        throw std::invalid_argument(source_ + ": cannot seek to byte offset " + std::to_string(offset) +
                                    " (the stream ends at " + std::to_string(position_) + ")");
      }
    }
  }
  member_offset_ = -1;
  data_offset_ = -1;
  members_ = 0;
  done_ = false;
}

std::optional<TarSampleName> split_tar_sample_name(std::string_view name) {
  const std::size_t slash = name.rfind('/');
  const std::size_t base = slash == std::string_view::npos ? 0 : slash + 1;
  const std::size_t dot = name.find('.', base);
  if (dot == std::string_view::npos || dot == base) return std::nullopt;
  TarSampleName split{std::string(name.substr(0, dot)), std::string(name.substr(dot + 1))};
  for (char& c : split.extension) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return split;
}

TarSampleReader::TarSampleReader(TarReader reader, TarSampleOptions options)
    : reader_(std::move(reader)), options_(std::move(options)) {
  for (const std::string& entry : options_.required) {
    std::vector<std::string> alternatives;
    for (std::size_t p = 0;;) {
      const std::size_t bar = std::min(entry.find('|', p), entry.size());
      alternatives.push_back(entry.substr(p, bar - p));
      if (alternatives.back().empty()) {
        throw std::invalid_argument("TarSampleOptions::required: " + detail::quoted_bytes(entry) +
                                    " holds an empty extension (expected extensions separated by '|', as 'jpg|png')");
      }
      if (bar == entry.size()) break;
      p = bar + 1;
    }
    required_.push_back(std::move(alternatives));
  }
}

void TarSampleReader::fail(const TarSample& sample, const std::string& what) const {
  throw std::invalid_argument(reader_.source() + ": the sample at byte offset " + std::to_string(sample.offset) +
                              " (key " + detail::quoted_bytes(sample.key) + ") " + what);
}

bool TarSampleReader::next(TarSample& sample) {
  sample.key.clear();
  sample.parts.clear();
  sample.offset = -1;
  std::string wrong;  // the first repeated or stepped-over part: what is wrong with the sample, once all of it is read
  uint64_t bytes = 0;
  for (;;) {
    if (!has_pending_) {
      if (!reader_.next(pending_)) break;
      std::optional<TarSampleName> split = split_tar_sample_name(pending_.name);
      if (!split) {
        ++skipped_;
        continue;
      }
      pending_name_ = std::move(*split);
      has_pending_ = true;
    }
    if (sample.offset < 0) {
      sample.key = pending_name_.key;
      sample.offset = pending_.offset;
    } else if (pending_name_.key != sample.key) {
      break;  // the next sample's first member: kept for the next call
    }
    has_pending_ = false;
    if (sample.parts.count(pending_name_.extension) != 0) {
      if (wrong.empty()) {
        wrong = "has the extension " + detail::quoted_bytes(pending_name_.extension) + " twice: the member " +
                detail::quoted_bytes(pending_.name) + " at byte offset " + std::to_string(pending_.offset) +
                " repeats it (a sample holds one member per extension)";
      }
      continue;
    }
    if (pending_.dropped_bytes > 0 && wrong.empty()) {
      wrong = "has the member " + detail::quoted_bytes(pending_.name) + " at byte offset " + std::to_string(pending_.offset) +
              " of " + std::to_string(pending_.dropped_bytes) + " data bytes, more than TarReaderOptions::max_member_bytes (" +
              std::to_string(reader_.options().max_member_bytes) + "): stepped over, not read";
    }
    bytes += pending_.bytes.size() + static_cast<uint64_t>(pending_.dropped_bytes);
    if (bytes > static_cast<uint64_t>(options_.max_sample_bytes)) {
      sample.parts.clear();  // over: the rest of the sample is read and dropped
      continue;
    }
    sample.parts.emplace(pending_name_.extension, std::move(pending_.bytes));
  }
  if (sample.offset < 0) return false;
  if (!wrong.empty()) fail(sample, wrong);
  if (bytes > static_cast<uint64_t>(options_.max_sample_bytes)) {
    fail(sample, "holds " + std::to_string(bytes) + " bytes in its members, more than TarSampleOptions::max_sample_bytes (" +
                     std::to_string(options_.max_sample_bytes) + ")");
  }
  for (const std::vector<std::string>& alternatives : required_) {
    if (std::any_of(alternatives.begin(), alternatives.end(),
                    [&](const std::string& e) { return sample.parts.count(e) != 0; })) {
      continue;
    }
    std::string wanted, has;
    for (const std::string& e : alternatives) wanted += (wanted.empty() ? "" : " or ") + detail::quoted_bytes(e);
    for (const auto& part : sample.parts) has += (has.empty() ? "" : ", ") + detail::quoted_bytes(part.first);
    fail(sample, "has no " + wanted + " part (its parts: " + has + "): every sample needs one");
  }
  return true;
}

int64_t TarSampleReader::position() const { return has_pending_ ? pending_.offset : reader_.position(); }

void TarSampleReader::seek(int64_t offset) {
  reader_.seek(offset);
  has_pending_ = false;
  skipped_ = 0;
}

}  // namespace fitscope
