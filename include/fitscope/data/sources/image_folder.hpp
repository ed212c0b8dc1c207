#pragma once
/// An image folder (`--data images:DIR`): DIR/<class>/<image>, Keras's image_dataset_from_directory
/// and torchvision's ImageFolder. Each sub-folder is a class, its index the folder's place in sorted
/// order; its .jpg, .jpeg and .png files (any case) are the class's examples; other files and hidden
/// entries are left alone. A folder without class folders but with images of its own is data to
/// predict: its images, by name, unlabeled (labeled() false, targets -1). The examples are in a seeded shuffled order, as Keras's. JPEGs are decoded with TurboJPEG, PNGs with libpng.
///
/// The constructor only scans: it reads each file's first bytes and last bytes, so a bad file is named
/// before training starts (empty, not an image, a JPEG named .png or the reverse, a header that does
/// not parse, a CMYK JPEG, more pixels than the budget, cut short before its end marker), and a folder
/// of any size costs no memory beyond its file list. get() reads and decodes one file: in the loader's workers, in parallel. An example is
/// float [channels, height, width] in [0, 1] (the loader's Normalize transform normalises), its
/// target the class index. Every error is std::invalid_argument naming the file and what was expected. Thread-safe.

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "fitscope/data/sources/dataset.hpp"
#include "fitscope/data/sources/tensor_dataset.hpp"

namespace fitscope {

struct ImageFolderOptions {
  /// The examples' size: each image is resized to it (bilinear, antialiased when it shrinks, as PIL
  /// and torchvision). 0, 0 = the images' own, which must then all be alike.
  int64_t height = 0, width = 0;
  int64_t channels = 0;  ///< 1 gray or 3 RGB; 0 = 3 when any image has colour, else 1
  /// The examples in an order shuffled by `seed` (Keras's shuffle=True), so that a validation split,
  /// the last fraction, holds every class; false = by class, then by name (torchvision's order).
  bool shuffle = true;
  uint64_t seed = 0;
  /// The class names, in index order, when another data set fixed them (a validation folder takes
  /// the training folder's classes()): each sub-folder is the class of its name, and one not in the
  /// list is an error naming it; a class without a folder is fine. Empty = the sub-folders, sorted.
  std::vector<std::string> classes;
  /// Leave out the files that fail the scan and empty class folders, instead of throwing. A file that
  /// passes the scan but fails to load later (its decoder refuses it, it was removed) is left out too:
  /// its place in the batch goes to the next example that loads. Both are listed in skipped().
  bool skip_bad_files = false;
  /// The most pixels an image may declare (width x height, read from its header before anything is
  /// allocated); 0 = no budget. The default is PIL's MAX_IMAGE_PIXELS (about 0.25 GiB of RGB bytes).
  int64_t max_pixels = 89'478'485;
  /// Let TurboJPEG decode a JPEG at 1/2, 1/4 or 1/8 scale in the DCT domain when both sides stay at
  /// least the example's size: fewer pixels decoded, then resized as usual.
  bool dct_scaling = true;
};

class ImageFolderDataset : public Dataset {
 public:
  /// Scans `dir`; throws std::invalid_argument naming the folder or the file.
  explicit ImageFolderDataset(std::string dir, ImageFolderOptions options = {});

  int64_t size() const override { return static_cast<int64_t>(files_.size()); }
  Example get(int64_t index) const override;
  /// Decodes each example straight into its place in the batch.
  Batch get_batch(const std::vector<int64_t>& indices) const override;
  std::string source() const override { return "images:" + dir_; }
  bool labeled() const override { return !classes_.empty(); }
  std::string example_name(int64_t index) const override { return file(index); }
  std::vector<int64_t> example_shape() const override { return {channels_, height_, width_}; }

  /// The class names (the sub-folders), in index order.
  const std::vector<std::string>& classes() const { return classes_; }
  std::vector<std::string> class_names() const override { return classes_; }
  /// Example `index`'s file and class.
  const std::string& file(int64_t index) const { return files_.at(static_cast<std::size_t>(index)); }
  int64_t target(int64_t index) const { return targets_.at(static_cast<std::size_t>(index)); }
  /// What skip_bad_files left out so far: "path: reason" per file or empty class folder, those of the
  /// scan first, then those that failed to load during training.
  std::vector<std::string> skipped() const override;

 private:
  /// Reads and decodes example `index` into `out` [channels, height, width].
  void decode_into(int64_t index, at::Tensor out) const;
  /// Example `index` into `out`, or under skip_bad_files the next one that loads; returns its target.
  int64_t load_into(int64_t index, at::Tensor out) const;

  std::string dir_;
  ImageFolderOptions options_;
  std::vector<std::string> classes_, files_;
  std::vector<int64_t> targets_;
  int64_t channels_ = 0, height_ = 0, width_ = 0;
  mutable std::mutex skipped_mutex_;
  mutable std::vector<std::string> skipped_;
  mutable std::vector<bool> failed_;  // per example: it failed to load (under skip_bad_files)
  mutable std::atomic<bool> any_failed_{false};
};

/// How write_image_folder writes a data set.
struct ImageFolderWriteOptions {
  std::string format = "jpg";  ///< jpg or png
  int quality = 90;            ///< JPEG quality, 1..100
  /// 1 gray or 3 RGB; 0 = the data's own. A gray set written as RGB gets a random tint per image
  /// (which says nothing of the class).
  int64_t channels = 0;
  /// The number of the data set's first image: file names are first_index + i, so a large folder can
  /// be written in parts.
  int64_t first_index = 0;
  /// Classes to make folders for; 0 = the largest target + 1.
  int64_t classes = 0;
};

/// Writes `data` (float inputs [N, C, H, W] in [0, 1], clamped; class-index targets) as an image folder
/// in `dir`: a sub-folder per class, class_00, class_01, ... (so sorted order is index order), holding
/// 000000.jpg, 000001.jpg, ... Throws std::invalid_argument for bad options and std::runtime_error
/// naming the file on I/O errors.
void write_image_folder(const std::string& dir, const TensorDataset& data, const ImageFolderWriteOptions& options = {});

}  // namespace fitscope
