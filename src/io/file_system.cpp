#include "fitscope/io/file_system.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace fitscope {
namespace {

class PosixFile final : public WritableFile {
 public:
  PosixFile(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~PosixFile() override {
    if (fd_ >= 0) ::close(fd_);
  }
  void append(std::string_view data) override {
    while (!data.empty()) {
      const ssize_t n = ::write(fd_, data.data(), data.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw IoError("write", path_, errno);
      data.remove_prefix(static_cast<std::size_t>(n));
    }
  }
  void write_at(uint64_t offset, std::string_view data) override {
    while (!data.empty()) {
      const ssize_t n = ::pwrite(fd_, data.data(), data.size(), static_cast<off_t>(offset));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw IoError("write", path_, errno);
      data.remove_prefix(static_cast<std::size_t>(n));
      offset += static_cast<uint64_t>(n);
    }
  }
  void sync() override {
    if (::fsync(fd_) != 0) throw IoError("fsync", path_, errno);
  }
  void close() override {
    const int fd = fd_;
    fd_ = -1;
    if (fd >= 0 && ::close(fd) != 0) throw IoError("close", path_, errno);
  }

 private:
  int fd_;
  std::string path_;
};

class PosixFileSystem final : public FileSystem {
 public:
  std::unique_ptr<WritableFile> create(const std::string& path) override {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw IoError("create", path, errno);
    return std::make_unique<PosixFile>(fd, path);
  }
  void rename(const std::string& from, const std::string& to) override {
    if (std::rename(from.c_str(), to.c_str()) != 0) throw IoError("rename " + from + " to", to, errno);
  }
  void sync_dir(const std::string& dir) override {
    const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) throw IoError("open directory", dir, errno);
    const int rc = ::fsync(fd);
    const int error = errno;
    ::close(fd);
    if (rc != 0) throw IoError("fsync directory", dir, error);
  }
  void remove(const std::string& path) override {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) throw IoError("remove", path, errno);
  }
  std::vector<std::string> list(const std::string& dir) override {
    std::vector<std::string> names;
    DIR* d = ::opendir(dir.c_str());
    if (!d) return names;
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    ::closedir(d);
    return names;
  }
  std::string read(const std::string& path) override {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw IoError("open", path, errno);
    std::string out;
    char buf[1 << 16];
    for (;;) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        const int error = errno;
        ::close(fd);
        throw IoError("read", path, error);
      }
      if (n == 0) break;
      out.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    return out;
  }
  bool create_dir(const std::string& dir) override {
    if (::mkdir(dir.c_str(), 0755) == 0) return true;
    if (errno == EEXIST && std::filesystem::is_directory(dir)) return false;
    throw IoError("create directory", dir, errno);
  }
};

}  // namespace

IoError::IoError(const std::string& operation, const std::string& path, int error)
    : std::runtime_error("cannot " + operation + " " + path + ": " + std::strerror(error)), path_(path), error_(error) {}

std::shared_ptr<FileSystem> posix_file_system() { return std::make_shared<PosixFileSystem>(); }

void write_atomically(FileSystem& fs, const std::string& path, std::string_view data) {
  write_atomically(fs, path, [&](WritableFile& file) { file.append(data); });
}

void write_atomically(FileSystem& fs, const std::string& path, const std::function<void(WritableFile&)>& write) {
  // unique per process and call: two writers of one path never write into each other's temp file
  static std::atomic<uint64_t> counter{0};
  const std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  try {
    auto file = fs.create(tmp);
    write(*file);
    file->sync();
    file->close();
    fs.rename(tmp, path);
  } catch (const IoError&) {
    try {
      fs.remove(tmp);
    } catch (const std::exception&) {
      // the first error is the one to report
    }
    throw;
  }
  fs.sync_dir(std::filesystem::path(path).parent_path().string());
}

void create_dirs(FileSystem& fs, const std::string& dir) {
  std::filesystem::path made;
  for (const auto& part : std::filesystem::path(dir).lexically_normal()) {
    const std::filesystem::path parent = made;
    made /= part;
    if (part.empty() || made == made.root_path() || part == ".." || part == ".") continue;
    if (fs.create_dir(made.string())) fs.sync_dir(parent.empty() ? "." : parent.string());
  }
}

}  // namespace fitscope
