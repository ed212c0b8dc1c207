#pragma once
/// CachedDataset: a decorator keeping every example of its base in memory after the first get(), so an
/// expensive source or map (decoding an image) runs once per example, not once per epoch, up to a
/// memory budget: once the examples held reach it, the others are computed on every get. Thread-safe:
/// concurrent gets of the same example may both compute it; the first stored copy wins.

#include <memory>
#include <mutex>
#include <vector>

#include "fitscope/data/sources/dataset.hpp"

namespace fitscope {

class CachedDataset : public Dataset {
 public:
  /// `max_bytes`: the budget for the examples held (their tensors' bytes); 0 = no limit. Throws
  /// std::invalid_argument for a null base or a negative budget.
  explicit CachedDataset(std::shared_ptr<const Dataset> base, int64_t max_bytes = 0);

  int64_t size() const override { return base_->size(); }
  Example get(int64_t index) const override;
  std::string source() const override { return base_->source() + " | cache"; }
  std::vector<std::string> skipped() const override { return base_->skipped(); }
  std::vector<std::string> class_names() const override { return base_->class_names(); }
  bool labeled() const override { return base_->labeled(); }
  std::string example_name(int64_t index) const override { return base_->example_name(index); }
  /// Examples held so far, and their bytes.
  int64_t cached() const;
  int64_t cached_bytes() const;

 private:
  std::shared_ptr<const Dataset> base_;
  mutable std::mutex mutex_;
  mutable std::vector<Example> examples_;
  mutable std::vector<bool> present_;
  int64_t max_bytes_;
  mutable int64_t cached_ = 0;
  mutable int64_t cached_bytes_ = 0;
};

}  // namespace fitscope
