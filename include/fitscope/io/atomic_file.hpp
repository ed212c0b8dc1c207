#pragma once
/// write_file_atomically: replaces a file's content so that a reader sees the old content or the new,
/// never a part: the bytes go to a temporary file in the same directory, which is flushed to disk and
/// renamed over the target, and the directory is flushed too. Throws std::runtime_error naming the
/// path and the system's reason; the target is untouched then. Thread-safe for distinct paths.
///
/// write_output_file: the same for a user's output path, which may be no regular file: a symbolic link
/// is followed and its target written (the link stays a link); a FIFO, a device (/dev/stdout) or any
/// other file that is not regular is opened and written in place, never replaced.
///
/// read_whole_file: the reading side for files a run wrote (summary.json, steps.csv, weights): only a
/// regular file (links followed) of at most `max_bytes` is read, so a link to /dev/zero or a FIFO is
/// an error naming the path and `expected` (what it should be), not an endless read.

#include <cstdint>
#include <limits>
#include <string>

namespace fitscope {

void write_file_atomically(const std::string& path, const std::string& content);

void write_output_file(const std::string& path, const std::string& content);

std::string read_whole_file(const std::string& path, const std::string& expected,
                            std::uintmax_t max_bytes = std::numeric_limits<std::uintmax_t>::max());

}  // namespace fitscope
