#pragma once
/// CachedDataset: a decorator keeping every example of its base in memory after the first get(), so an
/// expensive source or map runs once per example, not once per epoch. Thread-safe: concurrent gets of
/// the same example may both compute it; the first stored copy wins.

#include <memory>
#include <mutex>
#include <vector>

#include "fitscope/data/dataset.hpp"

namespace fitscope {

class CachedDataset : public Dataset {
 public:
  /// Throws std::invalid_argument for a null base.
  explicit CachedDataset(std::shared_ptr<const Dataset> base);

  int64_t size() const override { return base_->size(); }
  Example get(int64_t index) const override;
  std::string source() const override { return base_->source() + " | cache"; }
  /// Examples held so far.
  int64_t cached() const;

 private:
  std::shared_ptr<const Dataset> base_;
  mutable std::mutex mutex_;
  mutable std::vector<Example> examples_;
  mutable std::vector<bool> present_;
  mutable int64_t cached_ = 0;
};

}  // namespace fitscope
