#pragma once
/// The built-in data set `synthetic`: procedurally generated grayscale images in `classes` classes.
/// Every class is a few soft strokes at class-specific places; an example is its class's strokes,
/// shifted by up to `max_shift` pixels, scaled in brightness, with Gaussian noise. Fully determined by
/// the seed. Labels are balanced in expectation. Inputs [N, 1, H, W] float32, targets [N] int64.

#include <cstdint>
#include <optional>

#include "fitscope/data/sources/tensor_dataset.hpp"

namespace fitscope {

struct SyntheticOptions {
  int64_t size = 20000;      ///< examples
  uint64_t seed = 0;         ///< the same seed gives the same examples
  /// The seed of the classes' prototypes, when it is not `seed`: sets made in parts (make-images) draw
  /// each part's examples from its own seed around the prototypes of one.
  std::optional<uint64_t> prototype_seed;
  int64_t classes = 10;      ///< number of classes (>= 2)
  int64_t image_size = 28;   ///< height and width (>= 8)
  int64_t max_shift = 3;     ///< random translation in pixels, each axis
  double noise = 0.35;       ///< standard deviation of the added Gaussian noise
};

/// Throws std::invalid_argument for sizes out of range.
TensorDataset make_synthetic(const SyntheticOptions& options = {});

}  // namespace fitscope
