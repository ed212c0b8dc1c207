#include "fitscope/data/formats/cifar10_format.hpp"

#include <algorithm>
#include <stdexcept>

namespace fitscope {

CifarRecords parse_cifar10(const std::string& bytes, const std::string& name, int64_t classes) {
  const auto size = static_cast<int64_t>(bytes.size());
  if (size == 0) throw std::invalid_argument(name + ": empty file (expected records of 3073 bytes)");
  if (size % kCifarRecordBytes != 0) {
    throw std::invalid_argument(name + ": size " + std::to_string(size) + " bytes is not a multiple of the 3073-byte " +
                                "CIFAR-10 record (the last record is cut at byte offset " +
                                std::to_string(size - size % kCifarRecordBytes) + ")");
  }
  const int64_t records = size / kCifarRecordBytes;
  CifarRecords out;
  out.labels.resize(static_cast<std::size_t>(records));
  out.pixels.resize(static_cast<std::size_t>(records * kCifarImageBytes));
  for (int64_t r = 0; r < records; ++r) {
    const int64_t offset = r * kCifarRecordBytes;
    const auto label = static_cast<uint8_t>(bytes[static_cast<std::size_t>(offset)]);
    if (label >= classes) {
      throw std::invalid_argument(name + ": at byte offset " + std::to_string(offset) + " (record " + std::to_string(r) +
                                  "): label " + std::to_string(label) + " out of range (expected 0 to " +
                                  std::to_string(classes - 1) + ")");
    }
    out.labels[static_cast<std::size_t>(r)] = label;
    std::copy(bytes.begin() + offset + 1, bytes.begin() + offset + kCifarRecordBytes,
              out.pixels.begin() + r * kCifarImageBytes);
  }
  return out;
}

}  // namespace fitscope
