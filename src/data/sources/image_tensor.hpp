#pragma once
// Decoded pixels to a training tensor: the one path of the image folder and the shard records'
// decoder, so the same image bytes give the same tensor from a folder and from a shard.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>

#include "fitscope/data/sources/image_folder.hpp"
#include "data/formats/image_codec.hpp"

namespace fitscope::detail {

/// Writes `pixels` into `out` ([channels, height, width] floats in [0, 1], the pixels' channels):
/// channels first while still bytes (a quarter of the memory traffic), then to floats in one pass;
/// resized bilinearly (antialiased when it shrinks, as PIL) when their size differs from out's.
void pixels_to_tensor(Pixels& pixels, at::Tensor out);

/// Checks the options that read images, as ImageFolderOptions and RecordDecoderOptions spell them: a
/// size of both sides > 0 or both 0, channels 0, 1 or 3, max_pixels >= 0. Throws
/// std::invalid_argument naming `where`, the option, its value and what is expected.
void check_image_read_options(const std::string& where, int64_t height, int64_t width, int64_t channels, int64_t max_pixels);

/// The format write_image_folder writes with `options`; throws std::invalid_argument for a format,
/// quality or channel count it cannot write.
ImageFormat checked_file_format(const ImageFolderWriteOptions& options);

/// The other way: one image of a data set (floats [C, H, W], clamped to [0, 1]) as write_image_folder
/// writes its file, encoded with `channels` (a gray image written as RGB is tinted by its `number`, an
/// RGB one written as gray averaged), so the shard writer stores the very bytes of the folder's files.
/// Defined in image_folder.cpp, beside the tint.
std::string encode_image_file(const at::Tensor& image, int64_t number, int64_t channels, ImageFormat format, int quality);

}  // namespace fitscope::detail
