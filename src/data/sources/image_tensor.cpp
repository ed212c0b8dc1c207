#include "image_tensor.hpp"

#include <ATen/ATen.h>

#include <stdexcept>
#include <string>

namespace fitscope::detail {

void check_image_read_options(const std::string& where, int64_t height, int64_t width, int64_t channels, int64_t max_pixels) {
  if ((height > 0) != (width > 0) || height < 0 || width < 0) {
    throw std::invalid_argument(where + ": size " + std::to_string(height) + "x" + std::to_string(width) +
                                " (expected both sides > 0, or both 0 for the images' own)");
  }
  if (channels != 0 && channels != 1 && channels != 3) {
    throw std::invalid_argument(where + ": channels " + std::to_string(channels) + " (expected 1, 3 or 0)");
  }
  if (max_pixels < 0) {
    throw std::invalid_argument(where + ": max_pixels " + std::to_string(max_pixels) + " (expected >= 0, 0 = no budget)");
  }
}

void pixels_to_tensor(Pixels& pixels, at::Tensor out) {
  const int64_t height = out.size(1), width = out.size(2);
  const at::Tensor chw =
      at::from_blob(pixels.data.data(), {pixels.height, pixels.width, pixels.channels}, at::kByte).permute({2, 0, 1}).contiguous();
  const at::Tensor scale = at::scalar_tensor(1.0f / 255, at::kFloat);
  if (pixels.height == height && pixels.width == width) {
    at::mul_out(out, chw, scale);
    return;
  }
  const at::Tensor image = at::mul(chw, scale).unsqueeze(0);
  const bool shrinks = pixels.height > height || pixels.width > width;
  out.copy_((shrinks ? at::_upsample_bilinear2d_aa(image, {height, width}, /*align_corners=*/false)
                     : at::upsample_bilinear2d(image, {height, width}, /*align_corners=*/false))
                .squeeze(0));
}

}  // namespace fitscope::detail
