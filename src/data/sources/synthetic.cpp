#include "fitscope/data/sources/synthetic.hpp"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <stdexcept>
#include <string>

namespace fitscope {
namespace {

// Soft strokes: for every pixel, the brightest of exp(-d^2 / (2 w^2)) over the strokes, where d is the
// pixel's distance to the stroke's segment.
at::Tensor render_strokes(const at::Tensor& segments, int64_t size, double width) {
  auto coords = at::arange(size, at::kFloat);
  auto py = coords.view({size, 1}).expand({size, size});
  auto px = coords.view({1, size}).expand({size, size});
  at::Tensor image = at::zeros({size, size});
  for (int64_t s = 0; s < segments.size(0); ++s) {
    const auto seg = segments[s];
    const auto ax = seg[0], ay = seg[1], bx = seg[2], by = seg[3];
    const auto dx = bx - ax, dy = by - ay;
    const auto len2 = (dx * dx + dy * dy).clamp_min(1e-6);
    const auto t = (((px - ax) * dx + (py - ay) * dy) / len2).clamp(0, 1);
    const auto ex = px - (ax + t * dx), ey = py - (ay + t * dy);
    image = at::maximum(image, at::exp(-(ex * ex + ey * ey) / (2 * width * width)));
  }
  return image;
}

}  // namespace

TensorDataset make_synthetic(const SyntheticOptions& o) {
  if (o.size < 1) throw std::invalid_argument("synthetic size must be >= 1, got " + std::to_string(o.size));
  if (o.classes < 2) throw std::invalid_argument("synthetic classes must be >= 2, got " + std::to_string(o.classes));
  if (o.image_size < 8) throw std::invalid_argument("synthetic image size must be >= 8, got " + std::to_string(o.image_size));
  if (o.max_shift < 0 || o.max_shift * 4 >= o.image_size) {
    throw std::invalid_argument("synthetic max shift must be in [0, image_size/4), got " + std::to_string(o.max_shift));
  }
  auto gen = at::make_generator<at::CPUGeneratorImpl>(o.seed);
  const int64_t n = o.size, s = o.image_size;
  const double margin = o.max_shift + 2.0;

  // class prototypes: three strokes each, endpoints inside the margin (drawn first, from the examples'
  // generator unless they have a seed of their own)
  auto prototype_gen = o.prototype_seed && *o.prototype_seed != o.seed ? at::make_generator<at::CPUGeneratorImpl>(*o.prototype_seed) : gen;
  std::vector<at::Tensor> prototypes;
  for (int64_t c = 0; c < o.classes; ++c) {
    auto segments = at::rand({3, 4}, prototype_gen) * (s - 1 - 2 * margin) + margin;
    prototypes.push_back(render_strokes(segments, s, 1.1));
  }
  const auto protos = at::stack(prototypes);  // [C, S, S]

  const auto targets = at::randint(o.classes, {n}, gen, at::TensorOptions().dtype(at::kLong));
  auto images = protos.index_select(0, targets);  // [N, S, S]
  const int64_t span = 2 * o.max_shift + 1;
  const auto shift_y = at::randint(span, {n}, gen, at::TensorOptions().dtype(at::kLong)) - o.max_shift;
  const auto shift_x = at::randint(span, {n}, gen, at::TensorOptions().dtype(at::kLong)) - o.max_shift;
  for (int64_t dy = -o.max_shift; dy <= o.max_shift; ++dy) {
    for (int64_t dx = -o.max_shift; dx <= o.max_shift; ++dx) {
      const auto rows = at::nonzero(shift_y.eq(dy).logical_and(shift_x.eq(dx))).flatten();
      if (rows.numel() == 0) continue;
      images.index_copy_(0, rows, at::roll(images.index_select(0, rows), {dy, dx}, {1, 2}));
    }
  }
  const auto brightness = at::rand({n, 1, 1}, gen) * 0.6 + 0.7;
  images = images * brightness + at::randn({n, s, s}, gen) * o.noise;
  return TensorDataset(images.unsqueeze(1).contiguous(), targets, "synthetic");
}

}  // namespace fitscope
