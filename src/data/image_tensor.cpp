#include "image_tensor.hpp"

#include <ATen/ATen.h>

namespace fitscope::detail {

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
