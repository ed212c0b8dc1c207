#pragma once
/// The TFRecord file format (TensorFlow's tf.data.TFRecordDataset, TensorBoard's event files): a
/// sequence of records, each a little-endian uint64 length, the masked CRC-32C of those 8 length bytes
/// (uint32), `length` data bytes, and the masked CRC-32C of the data (uint32). A file may be
/// GZIP-compressed as a whole (TF's compression_type "GZIP"). Pure parsing and writing, no libtorch
/// (the fuzz target builds it alone); errors in the bytes are std::invalid_argument naming the file,
/// the record's byte offset, the value found and what was expected.

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>

namespace fitscope {

/// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) of `bytes`, continuing the CRC `crc` of the
/// bytes before them (0 to start): crc32c_extend(0, "123456789") == 0xE3069283.
uint32_t crc32c_extend(uint32_t crc, std::string_view bytes);
/// TFRecord's masked form of a CRC-32C, ((crc >> 15) | (crc << 17)) + 0xa282ead8, stored after the
/// length and after the data (a CRC of data that holds CRCs is then not trivially zero).
uint32_t mask_crc32c(uint32_t crc);

/// Appends one record to `out`: its framing and `record`'s bytes. Throws std::runtime_error when the
/// stream fails.
void write_tfrecord(std::ostream& out, std::string_view record);

enum class TfRecordCompression {
  kAuto,  ///< gzip when the file starts with gzip's magic (1f 8b) and not with a valid record header
  kNone,
  kGzip,
};

struct TfRecordReaderOptions {
  TfRecordCompression compression = TfRecordCompression::kAuto;
  /// The most data bytes a record may hold. A record declaring more is stepped over without being held
  /// (read through and dropped, 64 KiB at a time) and refused with an error after which the reader
  /// stands at the next record, as after a bad data CRC; where the stream ends inside it, the file is
  /// truncated. The data is read in pieces, so even below this limit a record is never allocated
  /// beyond the bytes there.
  int64_t max_record_bytes = int64_t{1} << 30;
};

/// Reads the records of one TFRecord stream in order, one at a time, checking both CRCs of each.
/// Memory is bounded by the largest record plus a 64 KiB inflate buffer: a gzip file is inflated as it
/// is read, never whole. Offsets count the uncompressed bytes (those of the records' framing) from the
/// stream's start; for a gzip file they are not positions in the file on disk.
///
/// The end of the stream between two records ends it (next returns false); an end inside a record's
/// header, data or data CRC is an error naming the record's offset. A reader owns the file it opened
/// (the path constructor) or borrows a stream (which must outlive it). Not thread-safe: one reader
/// per thread; readers of different files are independent. Movable, not copyable.
class TfRecordReader {
 public:
  /// Opens the file at `path`, which names it in errors. Throws std::invalid_argument when it cannot
  /// be opened.
  explicit TfRecordReader(const std::string& path, TfRecordReaderOptions options = {});
  /// Reads from `in` (borrowed) from its current position, whose offset is taken as `first_offset`;
  /// `source` names the stream in errors.
  TfRecordReader(std::istream& in, std::string source, TfRecordReaderOptions options = {},
                 int64_t first_offset = 0);
  ~TfRecordReader();
  TfRecordReader(TfRecordReader&&) noexcept;
  TfRecordReader& operator=(TfRecordReader&&) noexcept;
  TfRecordReader(const TfRecordReader&) = delete;
  TfRecordReader& operator=(const TfRecordReader&) = delete;

  /// The next record's data in `record` (replaced; its capacity is reused), or false at the end of the
  /// stream (and on every later call). Throws std::invalid_argument for a corrupt or truncated record,
  /// std::runtime_error when reading fails (an I/O error). After a wrong data CRC the framing still
  /// holds and the reader stands at the next record (a caller may skip the bad one); after any other
  /// error each later next() throws the same error again (until a seek on a file opened by path).
  bool next(std::string& record);

  /// The byte offset of the record the last successful next() returned (-1 before the first).
  int64_t offset() const { return record_offset_; }
  /// The byte offset of the record the next call to next() reads: where to seek() to resume.
  int64_t position() const { return position_; }
  /// How many records next() returned (since opening, or since the last seek).
  int64_t records() const { return records_; }
  /// Whether the stream is read through gzip.
  bool gzip() const { return gzip_; }
  const std::string& source() const { return source_; }

  /// Moves to `offset`, which must be a position() this stream had. A file opened by path seeks (a
  /// gzip file is reopened when going back, then inflated and skipped up to `offset`); a borrowed
  /// stream only skips forward (std::logic_error going back, or after an error). Throws std::invalid_argument when the
  /// stream ends before `offset`.
  void seek(int64_t offset);

 private:
  class Bytes;  // the byte source: a stream, or a stream inflated
  void open();
  std::size_t read(char* out, std::size_t size);
  /// Reads `size` bytes and drops them, 64 KiB at a time; the bytes the stream held (fewer at its end).
  uint64_t discard(uint64_t size);
  [[noreturn]] void fail(int64_t offset, const std::string& what, bool framing_lost);

  std::string source_;
  TfRecordReaderOptions options_;
  std::string path_;               // empty for a borrowed stream
  std::unique_ptr<std::istream> file_;
  std::istream* in_ = nullptr;
  std::unique_ptr<Bytes> bytes_;
  bool gzip_ = false;
  bool done_ = false;
  int64_t first_offset_ = 0;
  int64_t position_ = 0;
  int64_t record_offset_ = -1;
  int64_t reading_ = 0;            // the offset of the record being read, for errors
  int64_t records_ = 0;
  std::string error_;              // the error that lost the framing; thrown again by next()
};

}  // namespace fitscope
