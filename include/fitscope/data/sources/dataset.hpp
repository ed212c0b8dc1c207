#pragma once
/// Dataset: a data set as a small virtual interface: size() examples, get(i) one of them. Sources
/// (TensorDataset, the built-in synthetic set, IDX, CIFAR-10, CSV files) and decorators (MapDataset,
/// CachedDataset, SubsetDataset) implement it; the Loader batches any of them.
///
/// get() and get_batch() are const and must be thread-safe: the loader's workers call them
/// concurrently. Data sets are shared (std::shared_ptr<const Dataset>) between the loader and its
/// decorators, which keep their base alive.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "fitscope/data/sources/batch.hpp"

namespace fitscope {

/// One example: its input and its target (a class index as an int64 scalar, or a tensor).
struct Example {
  at::Tensor data;
  at::Tensor target;
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  /// Number of examples.
  virtual int64_t size() const = 0;
  /// Example `index`, 0 <= index < size().
  virtual Example get(int64_t index) const = 0;
  /// The examples at `indices`, collated along a new first dimension. The default gets each example
  /// and stacks them; an error names the sample index. Sources held in memory override it with one
  /// gather.
  virtual Batch get_batch(const std::vector<int64_t>& indices) const;
  /// Where the examples come from, for messages ("idx:data/mnist", "synthetic", ...).
  virtual std::string source() const { return "dataset"; }
  /// The shape of one example's input (from example 0 unless overridden); empty for an empty set.
  virtual std::vector<int64_t> example_shape() const;
  /// What the source left out as bad so far, "path: reason" each (an image folder's skip_bad_files):
  /// a Run counts them in summary.json. Decorators pass their base's on.
  virtual std::vector<std::string> skipped() const { return {}; }
  /// The classes' names in label order where the source names them (an image folder's sub-folders),
  /// so that other data can be matched to them by name: a Run keeps them in summary.json; empty where
  /// a label is only a number. Decorators pass their base's on.
  virtual std::vector<std::string> class_names() const { return {}; }
  /// Whether the examples have targets. Data to predict may have none (a folder of loose images, a CSV
  /// without its label column): their targets are -1, and fit and evaluate refuse them.
  virtual bool labeled() const { return true; }
  /// Whether get_batch() only gathers examples already in memory (no file read, no decoding, no user
  /// code): a batch of such data is cheap to build and free of side effects, so a loader whose workers
  /// are LoaderOptions::kAuto may time some and build them on the training thread. Default false.
  virtual bool in_memory() const { return false; }
  /// What names example `index` for a person (predict's rows): its file, its line; default its index.
  virtual std::string example_name(int64_t index) const { return std::to_string(index); }
};

/// Stacks examples into a batch (inputs and targets along a new first dimension).
Batch collate(const std::vector<Example>& examples);

}  // namespace fitscope
