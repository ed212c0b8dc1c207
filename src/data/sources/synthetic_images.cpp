#include "fitscope/data/sources/synthetic_images.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "fitscope/data/sources/synthetic.hpp"
#include "synthetic_parts.hpp"

namespace fitscope {
namespace {

constexpr int64_t kMaxSyntheticSide = 4096;
constexpr int64_t kMaxPrototypeFloats = int64_t{1} << 28;  // 1 GiB of class prototypes
constexpr uint64_t kHeldOutSeeds = 0x9E3779B97F4A7C15ull;  // held-out parts' seeds: apart from the others'

}  // namespace

namespace detail {

void check_synthetic_images_options(const SyntheticImagesOptions& o) {
  if (o.count < 1) throw std::invalid_argument("SyntheticImagesOptions::count must be >= 1, got " + std::to_string(o.count));
  if (o.height < 8 || o.width < 8 || o.height > kMaxSyntheticSide || o.width > kMaxSyntheticSide) {
    throw std::invalid_argument("SyntheticImagesOptions::height and width must be in [8, " + std::to_string(kMaxSyntheticSide) +
                                "] (each image is drawn as float pixels in memory), got " + std::to_string(o.height) + "x" +
                                std::to_string(o.width));
  }
  // the classes' prototypes are drawn whole, at the larger side, before any image
  const int64_t side = std::max(o.height, o.width);
  if (o.classes > kMaxPrototypeFloats / (side * side)) {
    throw std::invalid_argument("SyntheticImagesOptions::classes " + std::to_string(o.classes) + " at " + std::to_string(side) + "x" +
                                std::to_string(side) + ": the class prototypes would take " +
                                std::to_string(o.classes * side * side * 4 >> 20) + " MiB of float pixels, above " +
                                std::to_string(kMaxPrototypeFloats * 4 >> 20) + " MiB (expected fewer classes or smaller images)");
  }
}

void check_output_folder(const std::string& dir) {
  std::error_code ec;
  for (std::filesystem::path p = dir; !p.empty(); p = p.parent_path()) {  // the folder, or the first of its parents there
    if (!std::filesystem::exists(p, ec)) {
      if (p == p.parent_path()) break;
      continue;
    }
    if (!std::filesystem::is_directory(p, ec)) {
      throw std::invalid_argument(dir + ": " + (p == std::filesystem::path(dir) ? std::string("a file") : p.string() + " is a file") +
                                  ", not a folder (expected a folder to write the images into)");
    }
    break;
  }
}

void for_each_synthetic_part(const SyntheticImagesOptions& o, const std::function<void(int64_t, const TensorDataset&)>& write) {
  check_synthetic_images_options(o);
  // images made and written at a time: a large folder, or large images, in bounded memory (64 MiB of
  // float pixels a part, at most 1000 images)
  const int64_t side = std::max(o.height, o.width);
  const int64_t part = std::clamp<int64_t>((int64_t{64} << 20) / (side * side * 4), 1, 1000);
  for (int64_t first = 0; first < o.count; first += part) {
    SyntheticOptions s;
    s.size = std::min(part, o.count - first);
    s.seed = o.seed * 1000003 + static_cast<uint64_t>(first / part);  // distinct parts, distinct seeds,
    if (o.held_out) s.seed ^= kHeldOutSeeds;                           // (held out: apart from those)
    s.prototype_seed = o.seed * 1000003;                               // the same classes (part 0's)
    s.classes = o.classes;
    s.image_size = side;
    s.max_shift = std::min<int64_t>(s.max_shift, (side - 1) / 4);  // small images shift less
    TensorDataset data = make_synthetic(s);
    if (o.height != o.width) {  // the square set, resized
      data = TensorDataset(at::upsample_bilinear2d(data.inputs(), {o.height, o.width}, /*align_corners=*/false), data.targets());
    }
    write(first, data);
  }
}

}  // namespace detail

void write_synthetic_images(const std::string& dir, const SyntheticImagesOptions& o) {
  detail::check_output_folder(dir);
  ImageFolderWriteOptions write = o.write;
  write.classes = o.classes;
  detail::for_each_synthetic_part(o, [&](int64_t first, const TensorDataset& part) {
    write.first_index = first;
    write_image_folder(dir, part, write);
  });
}

}  // namespace fitscope
