#pragma once
// Private: declared data read in growing pieces (tar members, TFRecord records), so that a size a
// header declares but the stream does not hold never becomes an allocation.

#include <algorithm>
#include <cstddef>
#include <string>

namespace fitscope::detail {

/// Reads `size` bytes into `bytes` (cleared first) through `read(char*, n) -> bytes read`, growing it by
/// at most max(its size, 1 MiB) per read. Returns how many bytes the stream held: `size`, or fewer where
/// it ended first (`bytes` then holds what was read and room for the rest).
template <typename Read>
std::size_t read_in_pieces(std::string& bytes, std::size_t size, Read&& read) {
  constexpr std::size_t kPiece = std::size_t{1} << 20;
  bytes.clear();
  while (bytes.size() < size) {
    const std::size_t old = bytes.size();
    const std::size_t piece = std::min(size - old, std::max(old, kPiece));
    bytes.resize(old + piece);
    const std::size_t n = read(bytes.data() + old, piece);
    if (n < piece) return old + n;
  }
  return size;
}

}  // namespace fitscope::detail
