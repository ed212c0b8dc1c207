#pragma once
/// The checkpoint file format: a 32-byte header, then the payload (libtorch's pickle serialization of
/// the training state, see training_state.hpp).
///
///   offset 0   8 bytes  magic "FITSCKPT"
///   offset 8   4 bytes  format version, little-endian (1)
///   offset 12  4 bytes  reserved, 0
///   offset 16  8 bytes  payload size in bytes, little-endian
///   offset 24  4 bytes  CRC-32 (zlib) of the payload, little-endian
///   offset 28  4 bytes  CRC-32 of bytes 0..27 (the header itself)
///
/// A file that is not ours, torn (shorter than its header says) or tampered with (a checksum does not
/// match) is rejected with std::invalid_argument naming the file, the offset and what was expected.
/// Thread-safe; no libtorch.

#include <cstdint>
#include <string>
#include <string_view>

#include "fitscope/io/file_system.hpp"

namespace fitscope {

constexpr uint32_t kCheckpointVersion = 1;
constexpr std::size_t kCheckpointHeaderBytes = 32;

/// Header + payload.
std::string frame_checkpoint(std::string_view payload);
/// The same into `file`, streamed: `payload` writes its bytes into the sink it is given, and the header
/// (its size and checksum known once they are written) goes in front of them last.
void write_checkpoint_frame(WritableFile& file, const std::function<void(const ByteSink&)>& payload);
/// The payload of a checkpoint file's bytes, after every check; `name` names it in errors.
std::string unframe_checkpoint(std::string_view bytes, const std::string& name);

}  // namespace fitscope
