#include "fitscope/io/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "fitscope/io/file_system.hpp"

namespace fitscope {

void write_file_atomically(const std::string& path, const std::string& content) {
  static const std::shared_ptr<FileSystem> fs = posix_file_system();
  write_atomically(*fs, path, content);
}

std::string read_whole_file(const std::string& path, const std::string& expected, std::uintmax_t max_bytes) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) throw std::invalid_argument(path + ": no such file (expected " + expected + ")");
  const std::uintmax_t size = std::filesystem::is_regular_file(status) ? std::filesystem::file_size(path, ec) : 0;
  if (!std::filesystem::is_regular_file(status) || ec || size > max_bytes) {
    throw std::invalid_argument(path + ": " + (std::filesystem::is_regular_file(status) ? "a file of " + std::to_string(size) + " bytes"
                                                                                      : std::string("not a regular file")) +
                                " (expected " + expected + (max_bytes == std::numeric_limits<std::uintmax_t>::max() ? "" : ", at most " + std::to_string(max_bytes) + " bytes") + ")");
  }
  std::ifstream in(path, std::ios::binary);
  std::string bytes(static_cast<std::size_t>(size), '\0');
  if (!in.read(bytes.data(), static_cast<std::streamsize>(size))) {
    throw std::invalid_argument(path + ": cannot be read (expected " + expected + ")");
  }
  return bytes;
}

void write_output_file(const std::string& path, const std::string& content) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);  // through links, /dev/stdout's included
  if (!fs::exists(status) || fs::is_regular_file(status)) {
    // a link's final target is replaced, the link kept; a dangling link's target is created
    if (!fs::is_symlink(fs::symlink_status(path, ec))) return write_file_atomically(path, content);
    const fs::path target = fs::weakly_canonical(path, ec);
    if (ec) throw std::runtime_error(path + ": cannot follow the link (" + ec.message() + ")");
    return write_file_atomically(target.string(), content);
  }
  if (fs::is_directory(status)) throw std::runtime_error(path + ": is a directory (expected a file to write)");
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(path + ": cannot open for writing (" + std::strerror(errno) + ")");
  for (std::size_t done = 0; done < content.size();) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      throw std::runtime_error(path + ": write failed (" + std::strerror(error) + ")");
    }
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
}

}  // namespace fitscope
