#pragma once
/// The CIFAR-10 binary format (data_batch_N.bin, test_batch.bin): records of 3073 bytes, one label
/// byte then 3072 pixel bytes (the red, green and blue 32x32 planes). Pure parsing, no libtorch;
/// errors are std::invalid_argument naming the file and byte offset.

#include <cstdint>
#include <string>
#include <vector>

namespace fitscope {

constexpr int64_t kCifarImageBytes = 3 * 32 * 32;
constexpr int64_t kCifarRecordBytes = 1 + kCifarImageBytes;

struct CifarRecords {
  std::vector<uint8_t> labels;  ///< one per record
  std::vector<uint8_t> pixels;  ///< kCifarImageBytes per record, channel-major
};

/// Parses the bytes of one CIFAR-10 batch file; every label must be < `classes`.
CifarRecords parse_cifar10(const std::string& bytes, const std::string& name, int64_t classes = 10);

}  // namespace fitscope
