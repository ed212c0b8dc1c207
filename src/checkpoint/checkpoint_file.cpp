#include "fitscope/checkpoint/checkpoint_file.hpp"

#include <zlib.h>

#include <algorithm>
#include <stdexcept>

#include "fitscope/io/buffered_append.hpp"

namespace fitscope {
namespace {

constexpr char kMagic[8] = {'F', 'I', 'T', 'S', 'C', 'K', 'P', 'T'};

uint32_t crc(std::string_view data, uLong c = crc32(0L, Z_NULL, 0)) {
  // zlib's length is a uInt: feed large payloads in pieces
  while (!data.empty()) {
    const auto n = static_cast<uInt>(std::min<std::size_t>(data.size(), 1u << 30));
    c = crc32(c, reinterpret_cast<const Bytef*>(data.data()), n);
    data.remove_prefix(n);
  }
  return static_cast<uint32_t>(c);
}

void put(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((value >> (8 * i)) & 0xff);
}

uint64_t get(std::string_view in, std::size_t offset, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(in[offset + i])) << (8 * i);
  return v;
}

std::string header(uint64_t payload_size, uint32_t payload_crc) {
  std::string out(kMagic, sizeof kMagic);
  put(out, kCheckpointVersion, 4);
  put(out, 0, 4);
  put(out, payload_size, 8);
  put(out, payload_crc, 4);
  put(out, crc(out), 4);
  return out;
}

}  // namespace

std::string frame_checkpoint(std::string_view payload) { return header(payload.size(), crc(payload)).append(payload); }

void write_checkpoint_frame(WritableFile& file, const std::function<void(const ByteSink&)>& payload) {
  file.append(std::string(kCheckpointHeaderBytes, '\0'));
  BufferedAppend out(file);
  uint32_t payload_crc = crc({});
  payload([&](std::string_view bytes) {
    payload_crc = crc(bytes, payload_crc);
    out(bytes);
  });
  out.flush();
  file.write_at(0, header(out.taken(), payload_crc));
}

std::string unframe_checkpoint(std::string_view bytes, const std::string& name) {
  const auto fail = [&](std::size_t offset, const std::string& what) {
    throw std::invalid_argument(name + ": at byte offset " + std::to_string(offset) + ": " + what);
  };
  if (bytes.size() < 8 || bytes.substr(0, 8) != std::string_view(kMagic, 8)) {
    fail(0, "not a fitscope checkpoint (expected the magic \"FITSCKPT\")");
  }
  if (bytes.size() < kCheckpointHeaderBytes) {
    fail(bytes.size(), "truncated: the file ends inside the 32-byte header");
  }
  if (crc(bytes.substr(0, 28)) != get(bytes, 28, 4)) fail(28, "header checksum mismatch (the file is corrupt)");
  const uint64_t version = get(bytes, 8, 4);
  if (version != kCheckpointVersion) {
    fail(8, "format version " + std::to_string(version) + " is not supported (expected " +
                std::to_string(kCheckpointVersion) + ")");
  }
  const uint64_t size = get(bytes, 16, 8);
  const std::size_t available = bytes.size() - kCheckpointHeaderBytes;
  if (available != size) {
    fail(bytes.size(), std::string(available < size ? "truncated" : "trailing bytes") + ": the header announces " +
                           std::to_string(size) + " payload bytes, the file holds " + std::to_string(available));
  }
  const std::string_view payload = bytes.substr(kCheckpointHeaderBytes);
  if (crc(payload) != get(bytes, 24, 4)) {
    fail(kCheckpointHeaderBytes, "payload checksum mismatch (the file was corrupted or modified)");
  }
  return std::string(payload);
}

}  // namespace fitscope
