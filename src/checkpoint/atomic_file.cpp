#include "fitscope/checkpoint/atomic_file.hpp"

#include "fitscope/checkpoint/file_system.hpp"

namespace fitscope {

void write_file_atomically(const std::string& path, const std::string& content) {
  static const std::shared_ptr<FileSystem> fs = posix_file_system();
  write_atomically(*fs, path, content);
}

}  // namespace fitscope
