#pragma once
/// MapDataset: a decorator applying a user function to every example of a base data set, in the
/// loader's workers (a user transform per example). The function must be thread-safe; an exception it
/// throws reaches the training thread with the sample index and the source.

#include <functional>
#include <memory>
#include <string>

#include "fitscope/data/sources/dataset.hpp"

namespace fitscope {

class MapDataset : public Dataset {
 public:
  using Function = std::function<Example(Example, int64_t index)>;
  /// Throws std::invalid_argument for a null base or an empty function.
  MapDataset(std::shared_ptr<const Dataset> base, Function function, std::string name = "map");

  int64_t size() const override { return base_->size(); }
  Example get(int64_t index) const override { return function_(base_->get(index), index); }
  std::string source() const override { return base_->source() + " | " + name_; }
  std::vector<std::string> skipped() const override { return base_->skipped(); }
  std::vector<std::string> class_names() const override { return base_->class_names(); }
  bool labeled() const override { return base_->labeled(); }
  std::string example_name(int64_t index) const override { return base_->example_name(index); }

 private:
  std::shared_ptr<const Dataset> base_;
  Function function_;
  std::string name_;
};

}  // namespace fitscope
