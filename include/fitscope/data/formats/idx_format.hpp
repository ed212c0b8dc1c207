#pragma once
/// The IDX file format of MNIST and Fashion-MNIST: a 4-byte magic (0, 0, type, number of dimensions),
/// the dimensions as big-endian 32-bit integers, then the values in row-major order. Only unsigned
/// bytes (type 0x08) are accepted, which is what MNIST-like sets use. Pure parsing, no libtorch (the
/// fuzz target builds it alone); errors are std::invalid_argument naming the file and byte offset.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fitscope {

struct IdxArray {
  std::vector<int64_t> dims;   ///< e.g. {60000, 28, 28} for images, {60000} for labels
  std::vector<uint8_t> data;   ///< product(dims) values
};

/// Parses the bytes of an IDX file; `name` names it in errors.
IdxArray parse_idx(const std::string& bytes, const std::string& name);

/// The size in bytes of the IDX file whose first bytes are `head`, as its header declares: nothing
/// while `head` is shorter than the header; `head`'s size when it is not an IDX header (parse_idx then
/// says why). Bounds the inflating of a gzip-compressed file.
std::optional<int64_t> idx_declared_size(std::string_view head);

}  // namespace fitscope
