#pragma once
/// Transforms: batch-level preprocessing and augmentation, applied by the loader's workers after a
/// batch is gathered (so their cost is in the measured pipeline, off the training thread when
/// workers > 0). Random transforms draw per sample from (seed, epoch, sample index): the same seed
/// and epoch give the same augmented batches with 0, 1 or many workers, and a new epoch new ones.
/// A transform must not modify the batch in place (it may be a view of the data set). Transforms are
/// immutable and thread-safe.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fitscope/data/sources/batch.hpp"

namespace fitscope {

/// What a transform knows about the batch it is given.
struct BatchContext {
  uint64_t seed = 0;                       ///< the loader's seed
  int64_t epoch = 0;                       ///< the loader's epoch
  const std::vector<int64_t>* indices = nullptr;  ///< the data set indices of the batch's samples
};

class Transform {
 public:
  virtual ~Transform() = default;
  virtual std::string name() const = 0;
  virtual Batch apply(Batch batch, const BatchContext& context) const = 0;
};

/// (x - mean) / std, per channel (dimension 1 of the inputs) or with one value for all.
class Normalize : public Transform {
 public:
  /// `mean` and `std` of equal size >= 1, every std > 0 (std::invalid_argument otherwise).
  Normalize(std::vector<double> mean, std::vector<double> std);
  std::string name() const override { return "normalize"; }
  Batch apply(Batch batch, const BatchContext& context) const override;

 private:
  std::vector<double> mean_, std_;
};

/// Keras's RandomFlip("horizontal"): mirrors an image's last dimension with `probability`.
class RandomFlip : public Transform {
 public:
  explicit RandomFlip(double probability = 0.5);
  std::string name() const override { return "flip"; }
  Batch apply(Batch batch, const BatchContext& context) const override;

 private:
  double probability_;
};

/// tf.image.random_brightness: adds one delta per sample, uniform in [-max_delta, max_delta].
class RandomBrightness : public Transform {
 public:
  explicit RandomBrightness(double max_delta = 0.2);
  std::string name() const override { return "brightness"; }
  Batch apply(Batch batch, const BatchContext& context) const override;

 private:
  double max_delta_;
};

/// torchvision's RandomCrop(size, padding): pads an image's last two dimensions by `padding` zeros on
/// every side and crops it back to its size at a random offset, per sample.
class RandomCrop : public Transform {
 public:
  explicit RandomCrop(int64_t padding = 4);
  std::string name() const override { return "crop"; }
  Batch apply(Batch batch, const BatchContext& context) const override;

 private:
  int64_t padding_;
};

/// A user transform on batches (per-example user transforms: MapDataset).
class LambdaTransform : public Transform {
 public:
  using Function = std::function<Batch(Batch, const BatchContext&)>;
  LambdaTransform(std::string name, Function function);
  std::string name() const override { return name_; }
  Batch apply(Batch batch, const BatchContext& context) const override { return function_(std::move(batch), context); }

 private:
  std::string name_;
  Function function_;
};

/// The transforms of `--augment` ("flip,brightness,crop"; empty = none). Throws std::invalid_argument
/// naming an unknown entry.
std::vector<std::shared_ptr<Transform>> parse_augment(const std::string& list);

}  // namespace fitscope
