#pragma once
/// The built-in data set (synthetic.hpp) written as an image folder of any size (`fitscope
/// make-images`): a real-file data set to read back with ImageFolder, in the layout
/// write_image_folder makes. A free function without state: calls on different folders may run at
/// once; the caller owns the folder.

#include <cstdint>
#include <string>

#include "fitscope/data/sources/image_folder.hpp"

namespace fitscope {

/// What write_synthetic_images makes.
struct SyntheticImagesOptions {
  int64_t count = 2000;             ///< images (>= 1)
  int64_t height = 64, width = 64;  ///< each side in [8, 4096]; a non-square image is the square one, resized
  int64_t classes = 10;             ///< classes (>= 2): one folder each
  uint64_t seed = 0;                ///< the same seed gives the same images
  /// Images of the same task as the seed's (the same classes, drawn alike) but drawn apart from those
  /// written without it: a held-out set to validate on (another seed is another task).
  bool held_out = false;
  /// format, quality and channels (1 gray; 3 RGB, each image tinted at random); its classes and
  /// first_index are set by write_synthetic_images.
  ImageFolderWriteOptions write{"jpg", 90, 3};
};

/// Writes `options.count` images of the built-in set into `dir` (class_00/000000.jpg, ...), made and
/// written a part at a time (at most 1000 images or 64 MiB of pixels), so a large folder or large
/// images take bounded memory. Throws std::invalid_argument for options out of range and
/// std::runtime_error naming the file on I/O errors.
void write_synthetic_images(const std::string& dir, const SyntheticImagesOptions& options = {});

}  // namespace fitscope
