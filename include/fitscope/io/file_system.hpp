#pragma once
/// FileSystem: the file operations checkpoints need, behind a small interface (in the manner of
/// LevelDB's Env) so tests can inject faults (fault_injection.hpp). Every failure is an IoError naming
/// the operation, the path and the errno. The POSIX implementation is thread-safe.

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace fitscope {

class IoError : public std::runtime_error {
 public:
  IoError(const std::string& operation, const std::string& path, int error);
  const std::string& path() const { return path_; }
  int error() const { return error_; }

 private:
  std::string path_;
  int error_;
};

class WritableFile {
 public:
  virtual ~WritableFile() = default;
  virtual void append(std::string_view data) = 0;
  /// Writes `data` at `offset` of what was appended (a header known only once the rest is written).
  virtual void write_at(uint64_t offset, std::string_view data) = 0;
  virtual void sync() = 0;   ///< fsync
  virtual void close() = 0;
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;
  /// Creates (or truncates) `path` for writing.
  virtual std::unique_ptr<WritableFile> create(const std::string& path) = 0;
  virtual void rename(const std::string& from, const std::string& to) = 0;
  /// fsync of a directory, so a rename in it survives a power cut.
  virtual void sync_dir(const std::string& dir) = 0;
  virtual void remove(const std::string& path) = 0;
  /// File names (not paths) in `dir`; empty when it does not exist.
  virtual std::vector<std::string> list(const std::string& dir) = 0;
  virtual std::string read(const std::string& path) = 0;
  /// Creates one directory, whose parent exists; false when it existed already.
  virtual bool create_dir(const std::string& dir) = 0;
};

/// The real file system.
std::shared_ptr<FileSystem> posix_file_system();

/// Temp file in the same directory, append, fsync, close, rename over `path`, fsync the directory. On
/// failure the temp file is removed (best effort) and the IoError propagates; `path` is untouched.
void write_atomically(FileSystem& fs, const std::string& path, std::string_view data);
/// The same, the content written by `write` into the temporary file (streamed: never whole in memory).
void write_atomically(FileSystem& fs, const std::string& path, const std::function<void(WritableFile&)>& write);

/// Where a producer puts its bytes, piece by piece.
using ByteSink = std::function<void(std::string_view)>;

/// Creates `dir` and its missing parents, each fsynced into its parent, so a file renamed into it
/// survives a power cut.
void create_dirs(FileSystem& fs, const std::string& dir);

}  // namespace fitscope
