#pragma once
/// write_file_atomically: replaces a file's content so that a reader sees the old content or the new,
/// never a part: the bytes go to a temporary file in the same directory, which is flushed to disk and
/// renamed over the target, and the directory is flushed too. Throws std::runtime_error naming the
/// path and the system's reason; the target is untouched then. Thread-safe for distinct paths.

#include <string>

namespace fitscope {

void write_file_atomically(const std::string& path, const std::string& content);

}  // namespace fitscope
