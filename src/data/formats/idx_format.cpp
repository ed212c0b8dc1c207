#include "fitscope/data/formats/idx_format.hpp"

#include <stdexcept>

namespace fitscope {

IdxArray parse_idx(const std::string& bytes, const std::string& name) {
  const auto size = static_cast<int64_t>(bytes.size());
  const auto byte = [&](int64_t i) { return static_cast<uint8_t>(bytes[static_cast<std::size_t>(i)]); };
  const auto fail = [&](int64_t offset, const std::string& what) {
    throw std::invalid_argument(name + ": at byte offset " + std::to_string(offset) + ": " + what);
  };
  if (size < 4) fail(size, "file ends inside the 4-byte IDX magic (file has " + std::to_string(size) + " bytes)");
  if (byte(0) != 0 || byte(1) != 0) {
    fail(0, "not an IDX file: the magic must start with two zero bytes, found " + std::to_string(byte(0)) + " " +
                std::to_string(byte(1)));
  }
  if (byte(2) != 0x08) fail(2, "unsupported IDX value type " + std::to_string(byte(2)) + " (expected 8, unsigned bytes)");
  const int64_t ndims = byte(3);
  if (ndims < 1) fail(3, "an IDX file needs at least one dimension, found 0");
  const int64_t header = 4 + 4 * ndims;
  if (size < header) {
    fail(size, "file ends inside the header: " + std::to_string(ndims) + " dimensions need " + std::to_string(header) +
                   " bytes, the file has " + std::to_string(size));
  }
  IdxArray out;
  int64_t count = 1;
  for (int64_t d = 0; d < ndims; ++d) {
    const int64_t at = 4 + 4 * d;
    const int64_t dim = (static_cast<int64_t>(byte(at)) << 24) | (byte(at + 1) << 16) | (byte(at + 2) << 8) | byte(at + 3);
    out.dims.push_back(dim);
    if (dim > 0 && count > (int64_t{1} << 40) / dim) fail(at, "dimensions too large (" + std::to_string(dim) + ")");
    count *= dim;
  }
  const int64_t available = size - header;
  if (available < count) {
    fail(size, "truncated: the dimensions need " + std::to_string(count) + " bytes of data after the header, found " +
                   std::to_string(available));
  }
  if (available > count) {
    fail(header + count, std::to_string(available - count) + " unexpected bytes after the data (expected the end of the file)");
  }
  out.data.assign(bytes.begin() + header, bytes.end());
  return out;
}

std::optional<int64_t> idx_declared_size(std::string_view head) {
  const auto size = static_cast<int64_t>(head.size());
  if (size < 4) return std::nullopt;
  const auto byte = [&](int64_t i) { return static_cast<uint8_t>(head[static_cast<std::size_t>(i)]); };
  if (byte(0) != 0 || byte(1) != 0 || byte(2) != 0x08 || byte(3) == 0) return size;
  const int64_t header = 4 + 4 * int64_t{byte(3)};
  if (size < header) return std::nullopt;
  int64_t count = 1;
  for (int64_t at = 4; at < header; at += 4) {
    const int64_t dim = (static_cast<int64_t>(byte(at)) << 24) | (byte(at + 1) << 16) | (byte(at + 2) << 8) | byte(at + 3);
    if (dim > 0 && count > (int64_t{1} << 40) / dim) return size;  // parse_idx: "dimensions too large"
    count *= dim;
  }
  return header + count;
}

}  // namespace fitscope
