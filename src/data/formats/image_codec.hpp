#pragma once
// JPEG (TurboJPEG) and PNG (libpng) in memory, for the image folder data set and its writer. Pixels
// are 8-bit, interleaved, rows top to bottom: gray (1 channel) or RGB (3). Errors throw
// std::invalid_argument naming `name` (the file) and the codec's reason.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fitscope::detail {

enum class ImageFormat { unknown, jpeg, png };

/// The format the bytes begin with (JPEG's SOI marker, PNG's signature).
ImageFormat sniff_format(std::string_view head);

/// What a file's first bytes say of the image: size and channels (1 for gray, 3 otherwise).
struct ImageHeader {
  ImageFormat format = ImageFormat::unknown;
  int64_t height = 0, width = 0, channels = 0;
};
/// Throws when `head` (the first bytes of a file, perhaps not all of it) does not hold a whole header,
/// or holds one this codec cannot decode (a CMYK JPEG).
ImageHeader read_header(std::string_view head, const std::string& name);
/// PIL's MAX_IMAGE_PIXELS: about a quarter of a GiB of decoded RGB bytes.
constexpr int64_t kDefaultMaxPixels = 89'478'485;
/// Throws, naming the file, the header's offset and both sizes, when the header declares more than
/// `max_pixels` pixels (0 = no budget): checked before a decoder allocates anything.
void check_pixel_budget(const ImageHeader& header, int64_t max_pixels, const std::string& name);
/// Whether the file's last bytes close the image (JPEG's EOI marker, PNG's IEND chunk): a file cut
/// short fails it.
bool has_complete_end(ImageFormat format, std::string_view tail);

struct Pixels {
  int64_t height = 0, width = 0, channels = 0;
  std::vector<uint8_t> data;  // height x width x channels
};
/// Decodes `bytes` to `channels` channels. A JPEG may be decoded smaller in the DCT domain (TurboJPEG's
/// 1/2, 1/4, 1/8 scaling) while both sides stay at least `min_height` x `min_width`; 0 = full size.
/// A warning of the decoder (a truncated stream) counts as an error; so does a declared size above
/// `max_pixels`, found before any allocation.
Pixels decode(std::string_view bytes, const std::string& name, int64_t channels, int64_t max_pixels = kDefaultMaxPixels,
              int64_t min_height = 0, int64_t min_width = 0);

/// Encodes pixels as a JPEG of `quality` (1..100) or a PNG.
std::string encode(const Pixels& pixels, ImageFormat format, int quality = 90);

}  // namespace fitscope::detail
