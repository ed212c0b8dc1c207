#pragma once
// Private: the built-in set as write_synthetic_images makes it, a part at a time, shared by the folder
// writer and the shard writer so both hold the same images (the same seed, the same pixels).

#include <cstdint>
#include <functional>
#include <string>

#include "fitscope/data/sources/synthetic_images.hpp"
#include "fitscope/data/sources/tensor_dataset.hpp"

namespace fitscope::detail {

/// Throws std::invalid_argument for a count or size out of range (the classes are make_synthetic's).
void check_synthetic_images_options(const SyntheticImagesOptions& options);

/// Throws std::invalid_argument naming `dir` when something other than a folder is in its way (a
/// file): found before any image is made, not as the first write's error.
void check_output_folder(const std::string& dir);

/// Makes the set a part at a time (at most 1000 images or 64 MiB of float pixels) and calls
/// `write(first, part)` for each, in order: `part` holds images first, first + 1, ... as float
/// [n, 1, height, width] with their class-index targets. Each part's seed depends on its place only, so
/// the parts are the same however they are written.
void for_each_synthetic_part(const SyntheticImagesOptions& options,
                             const std::function<void(int64_t first, const TensorDataset& part)>& write);

}  // namespace fitscope::detail
