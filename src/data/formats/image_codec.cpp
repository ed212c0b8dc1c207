#include "image_codec.hpp"

#include <png.h>
#include <turbojpeg.h>

#include <cstring>
#include <memory>
#include <stdexcept>

namespace fitscope::detail {
namespace {

constexpr unsigned char kPngSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

/// One TurboJPEG handle per thread and kind: handles are not thread-safe, and making one per image
/// costs more than a small image's decode.
thread_local std::unique_ptr<void, int (*)(tjhandle)> t_decompressor(nullptr, tjDestroy);

tjhandle decompressor() {
  if (!t_decompressor) t_decompressor.reset(tjInitDecompress());
  if (!t_decompressor) throw std::runtime_error(std::string("TurboJPEG: ") + tjGetErrorStr2(nullptr));
  return t_decompressor.get();
}

/// Throws `what` + the decompressor's error, and drops the handle: one that failed keeps failing on
/// the next image with the same error (libjpeg-turbo 2.1).
[[noreturn]] void decompressor_failed(const std::string& what) {
  const std::string why = tjGetErrorStr2(t_decompressor.get());
  t_decompressor.reset();
  throw std::invalid_argument(what + why);
}

tjhandle compressor() {
  thread_local std::unique_ptr<void, int (*)(tjhandle)> handle(tjInitCompress(), tjDestroy);
  if (!handle) throw std::runtime_error(std::string("TurboJPEG: ") + tjGetErrorStr2(nullptr));
  return handle.get();
}

uint32_t big_endian(const unsigned char* p) { return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3]; }

const unsigned char* bytes_of(std::string_view s) { return reinterpret_cast<const unsigned char*>(s.data()); }

}  // namespace

ImageFormat sniff_format(std::string_view head) {
  const unsigned char* b = bytes_of(head);
  if (head.size() >= 3 && b[0] == 0xff && b[1] == 0xd8 && b[2] == 0xff) return ImageFormat::jpeg;
  if (head.size() >= 8 && std::memcmp(b, kPngSignature, 8) == 0) return ImageFormat::png;
  return ImageFormat::unknown;
}

ImageHeader read_header(std::string_view head, const std::string& name) {
  ImageHeader h;
  h.format = sniff_format(head);
  if (h.format == ImageFormat::jpeg) {
    int width = 0, height = 0, subsampling = 0, colorspace = 0;
    if (tjDecompressHeader3(decompressor(), bytes_of(head), static_cast<unsigned long>(head.size()), &width, &height,
                            &subsampling, &colorspace) != 0) {
      decompressor_failed(name + ": JPEG header: ");
    }
    if (width < 1 || height < 1) {
      throw std::invalid_argument(name + ": JPEG header: size " + std::to_string(width) + "x" + std::to_string(height) +
                                  " (expected at least 1 pixel a side)");
    }
    if (colorspace == TJCS_CMYK || colorspace == TJCS_YCCK) {
      throw std::invalid_argument(name + ": JPEG header: CMYK colour, which TurboJPEG cannot convert (expected gray, RGB or YCbCr)");
    }
    h.height = height;
    h.width = width;
    h.channels = colorspace == TJCS_GRAY ? 1 : 3;
  } else if (h.format == ImageFormat::png) {
    // the IHDR chunk follows the signature: length, "IHDR", width, height, depth, colour type
    const unsigned char* b = bytes_of(head);
    if (head.size() < 26 || std::memcmp(b + 12, "IHDR", 4) != 0) {
      throw std::invalid_argument(name + ": PNG header: no IHDR chunk at offset 12");
    }
    h.width = big_endian(b + 16);
    h.height = big_endian(b + 20);
    const int colour = b[25];
    h.channels = colour == 0 || colour == 4 ? 1 : 3;  // gray, gray + alpha
    if (h.width == 0 || h.height == 0 || h.width > (1 << 24) || h.height > (1 << 24)) {
      throw std::invalid_argument(name + ": PNG header at offset 16: size " + std::to_string(h.width) + "x" +
                                  std::to_string(h.height) + " (expected 1 to 16777216 pixels a side)");
    }
  } else {
    throw std::invalid_argument(name + ": not a JPEG or PNG image (its first bytes are neither signature)");
  }
  return h;
}

void check_pixel_budget(const ImageHeader& h, int64_t max_pixels, const std::string& name) {
  if (max_pixels <= 0 || h.height * h.width <= max_pixels) return;
  throw std::invalid_argument(name + (h.format == ImageFormat::png ? ": PNG header at offset 16" : ": JPEG header") +
                              ": " + std::to_string(h.width) + "x" + std::to_string(h.height) + " = " +
                              std::to_string(h.height * h.width) + " pixels, above the budget of " +
                              std::to_string(max_pixels) + " pixels an image (ImageFolderOptions::max_pixels)");
}

bool has_complete_end(ImageFormat format, std::string_view tail) {
  const unsigned char* b = bytes_of(tail);
  if (format == ImageFormat::png) return tail.size() >= 8 && std::memcmp(b + tail.size() - 8, "IEND", 4) == 0;
  // JPEG: the EOI marker, perhaps followed by padding some writers add
  for (std::size_t i = tail.size(); i >= 2; --i) {
    if (b[i - 2] == 0xff && b[i - 1] == 0xd9) return true;
  }
  return false;
}

Pixels decode(std::string_view bytes, const std::string& name, int64_t channels, int64_t max_pixels, int64_t min_height,
              int64_t min_width) {
  Pixels p;
  p.channels = channels;
  const ImageFormat format = sniff_format(bytes);
  if (format == ImageFormat::jpeg) {
    tjhandle tj = decompressor();
    const ImageHeader h = read_header(bytes, name);
    check_pixel_budget(h, max_pixels, name);
    tjscalingfactor chosen{1, 1};
    if (min_height > 0 && min_width > 0) {  // the smallest scale that keeps both sides large enough
      int count = 0;
      const tjscalingfactor* factors = tjGetScalingFactors(&count);
      for (int i = 0; i < count; ++i) {
        const tjscalingfactor f = factors[i];
        if (f.num > f.denom) continue;
        if (TJSCALED(h.height, f) >= min_height && TJSCALED(h.width, f) >= min_width &&
            f.num * chosen.denom < chosen.num * f.denom) {
          chosen = f;
        }
      }
    }
    p.height = TJSCALED(h.height, chosen);
    p.width = TJSCALED(h.width, chosen);
    p.data.resize(static_cast<std::size_t>(p.height * p.width * channels));
    if (tjDecompress2(tj, bytes_of(bytes), static_cast<unsigned long>(bytes.size()), p.data.data(), static_cast<int>(p.width),
                      0, static_cast<int>(p.height), channels == 1 ? TJPF_GRAY : TJPF_RGB, TJFLAG_STOPONWARNING) != 0) {
      decompressor_failed(name + ": JPEG data: ");
    }
    return p;
  }
  if (format == ImageFormat::png) {
    png_image image;
    std::memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_memory(&image, bytes.data(), bytes.size())) {
      throw std::invalid_argument(name + ": PNG: " + image.message);
    }
    ImageHeader h;
    h.format = ImageFormat::png;
    h.height = image.height;
    h.width = image.width;
    try {
      check_pixel_budget(h, max_pixels, name);
    } catch (...) {
      png_image_free(&image);
      throw;
    }
    image.format = channels == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
    p.height = image.height;
    p.width = image.width;
    p.data.resize(PNG_IMAGE_SIZE(image));
    if (!png_image_finish_read(&image, nullptr, p.data.data(), 0, nullptr)) {
      const std::string why = image.message;
      png_image_free(&image);
      throw std::invalid_argument(name + ": PNG data: " + why);
    }
    return p;
  }
  throw std::invalid_argument(name + ": not a JPEG or PNG image (its first bytes are neither signature)");
}

std::string encode(const Pixels& pixels, ImageFormat format, int quality) {
  if (format == ImageFormat::jpeg) {
    unsigned char* out = nullptr;
    unsigned long size = 0;
    tjhandle tj = compressor();
    if (tjCompress2(tj, pixels.data.data(), static_cast<int>(pixels.width), 0, static_cast<int>(pixels.height),
                    pixels.channels == 1 ? TJPF_GRAY : TJPF_RGB, &out, &size, pixels.channels == 1 ? TJSAMP_GRAY : TJSAMP_420,
                    quality, 0) != 0) {
      throw std::runtime_error(std::string("JPEG encoding: ") + tjGetErrorStr2(tj));
    }
    std::string bytes(reinterpret_cast<const char*>(out), size);
    tjFree(out);
    return bytes;
  }
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  image.width = static_cast<png_uint_32>(pixels.width);
  image.height = static_cast<png_uint_32>(pixels.height);
  image.format = pixels.channels == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
  png_alloc_size_t size = 0;
  if (!png_image_write_to_memory(&image, nullptr, &size, 0, pixels.data.data(), 0, nullptr)) {
    throw std::runtime_error(std::string("PNG encoding: ") + image.message);
  }
  std::string bytes(size, '\0');
  if (!png_image_write_to_memory(&image, bytes.data(), &size, 0, pixels.data.data(), 0, nullptr)) {
    throw std::runtime_error(std::string("PNG encoding: ") + image.message);
  }
  bytes.resize(size);
  return bytes;
}

}  // namespace fitscope::detail
