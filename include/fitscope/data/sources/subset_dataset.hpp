#pragma once
/// SubsetDataset: the examples [begin, end) of a base data set (Keras's validation_split on any data
/// set: split_dataset takes the last fraction). Thread-safe as its base.

#include <memory>
#include <utility>

#include "fitscope/data/sources/dataset.hpp"

namespace fitscope {

class SubsetDataset : public Dataset {
 public:
  /// Throws std::invalid_argument for a null base or a range outside it.
  SubsetDataset(std::shared_ptr<const Dataset> base, int64_t begin, int64_t end);

  int64_t size() const override { return end_ - begin_; }
  Example get(int64_t index) const override { return base_->get(begin_ + index); }
  Batch get_batch(const std::vector<int64_t>& indices) const override;
  std::string source() const override { return base_->source(); }
  std::vector<std::string> skipped() const override { return base_->skipped(); }
  std::vector<std::string> class_names() const override { return base_->class_names(); }
  bool labeled() const override { return base_->labeled(); }
  bool in_memory() const override { return base_->in_memory(); }
  std::string example_name(int64_t index) const override { return base_->example_name(begin_ + index); }

 private:
  std::shared_ptr<const Dataset> base_;
  int64_t begin_;
  int64_t end_;
};

/// Keras's validation_split: (the first 1 - fraction, the last fraction) of `data`. Throws
/// std::invalid_argument unless 0 < fraction < 1 and both parts are non-empty.
std::pair<std::shared_ptr<const Dataset>, std::shared_ptr<const Dataset>> split_dataset(
    const std::shared_ptr<const Dataset>& data, double fraction);

}  // namespace fitscope
