#pragma once
/// Tar archives as WebDataset's shards: a tar file whose regular members are grouped into samples by
/// their names (`dir/000123.jpg` and `dir/000123.cls` are the parts `jpg` and `cls` of the sample
/// `dir/000123`). An archive is a sequence of 512-byte headers, each followed by its member's data
/// padded to a 512-byte block, and ends with two zero blocks. The reader takes the ustar, GNU and pax
/// (POSIX.1-2001) formats that GNU tar, bsdtar and Python's tarfile write: header checksums, octal and
/// GNU base-256 sizes, the ustar prefix field, GNU long names (typeflag 'L') and pax extended headers
/// ('x' with `path=` and `size=`; global 'g' headers are skipped). Pure parsing and writing, no
/// libtorch (the fuzz target builds it alone); errors in the bytes are std::invalid_argument naming
/// the file, the header's or member's byte offset, the value found and what was expected.

#include <cstdint>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fitscope {

/// Appends one regular file to a tar archive: a ustar header (mode 0644, owner 0, mtime 0, so the same
/// members make the same bytes) and `bytes` padded to a 512-byte block. A name of up to 100 bytes goes
/// in the header's name field; a longer one is split at a '/' into the prefix field (up to 155 bytes)
/// and the name field (up to 100). Throws std::invalid_argument for a name that cannot be written that
/// way (empty, longer than that, holding a NUL byte, ending with '/'), std::runtime_error when the
/// stream fails.
void write_tar_member(std::ostream& out, std::string_view name, std::string_view bytes);
/// Ends an archive: two zero blocks. Throws std::runtime_error when the stream fails.
void finish_tar(std::ostream& out);

/// One regular file of an archive.
struct TarMember {
  std::string name;    ///< the full path as stored (a pax path, a GNU long name, or prefix/name)
  std::string bytes;   ///< its data
  int64_t offset = -1; ///< the byte offset of its first header (a long name's or pax header's, when it has one)
  /// With TarReaderOptions::step_over_large_members: the data bytes of a member above max_member_bytes,
  /// stepped over and not held (`bytes` is then empty); 0 otherwise.
  int64_t dropped_bytes = 0;
};

struct TarReaderOptions {
  /// A member declaring more data bytes than this is refused before anything is read of it. The data
  /// is read in pieces, so even below this limit a member is never allocated beyond the bytes there.
  int64_t max_member_bytes = int64_t{1} << 30;
  /// Instead of refusing a member above max_member_bytes, step over its data (read through and
  /// dropped) and return it with TarMember::dropped_bytes set: a sample reader then refuses the sample
  /// and stands at the next one.
  bool step_over_large_members = false;
  /// The same for a GNU long name's or a pax extended header's data, which is held whole.
  int64_t max_extended_header_bytes = int64_t{1} << 20;
};

/// Reads the regular files of one tar stream in archive order, one at a time, checking each header's
/// checksum (the unsigned sum of its 512 bytes with the checksum field counted as spaces, or the
/// historic signed sum, as GNU tar accepts). Directories, links, devices, FIFOs and other entries
/// without a file's data are skipped (a regular file's entry whose name ends with '/' is an old
/// tar's directory). A GNU sparse file is refused (its data is not the file's bytes). Memory is bounded by the largest
/// member plus a 64 KiB skip buffer.
///
/// The archive ends at a zero block (the first of the two that end it), or at the end of the stream
/// where a header would start; an end inside a header, a member's data or its padding is an error
/// naming the offset. A reader owns the file it opened (the path constructor) or borrows a stream
/// (which must outlive it). Every error leaves the reader failed: each later next() throws it again
/// (until a seek on a file opened by path). Not thread-safe: one reader per thread; readers of
/// different files are independent. Movable, not copyable.
class TarReader {
 public:
  /// Opens the file at `path`, which names it in errors. Throws std::invalid_argument when it cannot
  /// be opened.
  explicit TarReader(const std::string& path, TarReaderOptions options = {});
  /// Reads from `in` (borrowed) from its current position, whose offset is taken as `first_offset`;
  /// `source` names the stream in errors.
  TarReader(std::istream& in, std::string source, TarReaderOptions options = {}, int64_t first_offset = 0);
  ~TarReader();
  TarReader(TarReader&&) noexcept;
  TarReader& operator=(TarReader&&) noexcept;
  TarReader(const TarReader&) = delete;
  TarReader& operator=(const TarReader&) = delete;

  /// The next regular file in `member` (replaced; its bytes' capacity is reused), or false at the end
  /// of the archive (and on every later call). Throws std::invalid_argument for a corrupt or truncated
  /// archive, std::runtime_error when reading fails (an I/O error).
  bool next(TarMember& member);

  /// The byte offset of the first header of the member the last successful next() returned (-1 before
  /// the first): seek() there reads it again.
  int64_t offset() const { return member_offset_; }
  /// The byte offset of that member's data (-1 before the first).
  int64_t data_offset() const { return data_offset_; }
  /// The byte offset of the header the next call to next() reads: where to seek() to resume.
  int64_t position() const { return position_; }
  /// How many members next() returned (since opening, or since the last seek).
  int64_t members() const { return members_; }
  const std::string& source() const { return source_; }
  const TarReaderOptions& options() const { return options_; }

  /// Moves to `offset`, which must be a position() or an offset() this stream had (a header at a
  /// 512-byte block from the start). A file opened by path seeks; a borrowed stream only skips forward
  /// (std::logic_error going back, or after an error). Throws std::invalid_argument for an offset off
  /// the blocks, or when the stream ends before it.
  void seek(int64_t offset);

 private:
  void open();
  std::size_t read(char* out, std::size_t size);
  void skip(int64_t bytes, int64_t at, const std::string& subject, const std::string& what);
  std::string read_extended(int64_t at, uint64_t size, const char* what);
  [[noreturn]] void fail(int64_t offset, const std::string& subject, const std::string& what);

  std::string source_;
  TarReaderOptions options_;
  std::string path_;  // empty for a borrowed stream
  std::unique_ptr<std::istream> file_;
  std::istream* in_ = nullptr;
  bool done_ = false;
  int64_t first_offset_ = 0;
  int64_t position_ = 0;
  int64_t member_offset_ = -1;
  int64_t data_offset_ = -1;
  int64_t members_ = 0;
  std::string error_;  // the error that failed the reader; thrown again by next()
};

/// A member name's sample key and extension, WebDataset's way: the key is the path up to the first dot
/// of its last component, the extension what follows that dot, in lower case (`dir/000123.seg.PNG` ->
/// `dir/000123` and `seg.png`). std::nullopt for a name whose last component has no dot after its
/// first character (`README`, `.hidden`, `dir/`): such a member belongs to no sample.
struct TarSampleName {
  std::string key;
  std::string extension;
};
std::optional<TarSampleName> split_tar_sample_name(std::string_view name);

/// One sample: the consecutive members of an archive that share a key, by extension.
struct TarSample {
  std::string key;
  std::map<std::string, std::string> parts;  ///< extension -> the member's bytes
  int64_t offset = -1;                        ///< the byte offset of its first member (TarMember::offset)
};

struct TarSampleOptions {
  /// The parts every sample must have: each entry an extension, or alternatives separated by '|'
  /// ({"jpg|png", "cls"}: a jpg or a png, and a cls). Empty: any parts.
  std::vector<std::string> required;
  /// A sample whose parts hold more bytes than this together is refused (its members are read one at a
  /// time and dropped once over).
  int64_t max_sample_bytes = int64_t{1} << 30;
};

/// Groups the members a TarReader returns into samples: consecutive members with the same key form one
/// sample (a key that comes back after another is a new sample, as in WebDataset). Members that belong
/// to no sample (split_tar_sample_name) are skipped and counted. A sample that lacks a required part,
/// repeats an extension or is too large is an std::invalid_argument naming the file, the sample's
/// offset, its key and what is wrong; the reader has then read all of that sample's members and stands
/// at the next sample (a caller may skip the bad one). The reader's own errors pass through and leave
/// it failed. Not thread-safe; movable.
class TarSampleReader {
 public:
  /// Throws std::invalid_argument for an empty extension in `options.required`.
  explicit TarSampleReader(TarReader reader, TarSampleOptions options = {});

  /// The next sample in `sample` (replaced), or false at the end of the archive.
  bool next(TarSample& sample);

  /// The byte offset where the next sample starts (its first member's offset(), or the reader's
  /// position() before it is read): where to seek() to resume.
  int64_t position() const;
  /// Moves to `offset`, a position() this stream had (see TarReader::seek).
  void seek(int64_t offset);
  /// How many members were skipped because they belong to no sample (since opening or the last seek).
  int64_t skipped_members() const { return skipped_; }
  const TarReader& reader() const { return reader_; }

 private:
  [[noreturn]] void fail(const TarSample& sample, const std::string& what) const;

  TarReader reader_;
  TarSampleOptions options_;
  std::vector<std::vector<std::string>> required_;  // the alternatives of each required part
  TarMember pending_;                               // the first member of the next sample, read ahead
  TarSampleName pending_name_;
  bool has_pending_ = false;
  int64_t skipped_ = 0;
};

}  // namespace fitscope
