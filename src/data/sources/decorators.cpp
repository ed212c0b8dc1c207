// MapDataset, CachedDataset, SubsetDataset: the data set decorators.
#include <ATen/ATen.h>

#include <stdexcept>
#include <string>

#include "fitscope/data/sources/cached_dataset.hpp"
#include "fitscope/data/sources/map_dataset.hpp"
#include "fitscope/data/sources/subset_dataset.hpp"
#include "split_count.hpp"

namespace fitscope {
namespace {
void require_base(const std::shared_ptr<const Dataset>& base, const char* what) {
  if (!base) throw std::invalid_argument(std::string(what) + " needs a base data set, got null");
}
}  // namespace

MapDataset::MapDataset(std::shared_ptr<const Dataset> base, Function function, std::string name)
    : base_(std::move(base)), function_(std::move(function)), name_(std::move(name)) {
  require_base(base_, "MapDataset");
  if (!function_) throw std::invalid_argument("MapDataset " + name_ + " needs a function, got an empty one");
}

CachedDataset::CachedDataset(std::shared_ptr<const Dataset> base, int64_t max_bytes)
    : base_(std::move(base)), max_bytes_(max_bytes) {
  require_base(base_, "CachedDataset");
  if (max_bytes < 0) throw std::invalid_argument("cache budget must be >= 0 bytes, got " + std::to_string(max_bytes));
  examples_.resize(static_cast<std::size_t>(base_->size()));
  present_.resize(static_cast<std::size_t>(base_->size()), false);
}

Example CachedDataset::get(int64_t index) const {
  if (index < 0 || index >= size()) {
    throw std::out_of_range("example " + std::to_string(index) + " outside " + source() + " of " +
                            std::to_string(size()) + " examples");
  }
  const auto i = static_cast<std::size_t>(index);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (present_[i]) return examples_[i];
  }
  Example e = base_->get(index);  // computed outside the lock: workers do not wait on each other
  // own the memory: a view would keep (and expose) a mutable base buffer
  e.data = e.data.contiguous().clone();
  e.target = e.target.clone();
  const int64_t bytes = static_cast<int64_t>(e.data.nbytes() + e.target.nbytes());
  std::lock_guard<std::mutex> lock(mutex_);
  if (present_[i]) return examples_[i];
  if (max_bytes_ > 0 && cached_bytes_ + bytes > max_bytes_) return e;  // the budget is spent: not kept
  examples_[i] = e;
  present_[i] = true;
  ++cached_;
  cached_bytes_ += bytes;
  return e;
}

int64_t CachedDataset::cached() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cached_;
}

int64_t CachedDataset::cached_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cached_bytes_;
}

SubsetDataset::SubsetDataset(std::shared_ptr<const Dataset> base, int64_t begin, int64_t end)
    : base_(std::move(base)), begin_(begin), end_(end) {
  require_base(base_, "SubsetDataset");
  if (begin < 0 || end < begin || end > base_->size()) {
    throw std::out_of_range("subset [" + std::to_string(begin) + ", " + std::to_string(end) + ") outside " +
                            base_->source() + " of " + std::to_string(base_->size()) + " examples");
  }
}

Batch SubsetDataset::get_batch(const std::vector<int64_t>& indices) const {
  std::vector<int64_t> shifted(indices);
  for (int64_t& i : shifted) {
    if (i < 0 || i >= size()) {
      throw std::out_of_range("example " + std::to_string(i) + " outside a subset of " + std::to_string(size()));
    }
    i += begin_;
  }
  return base_->get_batch(shifted);
}

std::pair<std::shared_ptr<const Dataset>, std::shared_ptr<const Dataset>> split_dataset(
    const std::shared_ptr<const Dataset>& data, double fraction) {
  require_base(data, "split_dataset");
  const int64_t n = data->size();
  const int64_t held_out = detail::held_out_count(n, fraction, data->source());
  return {std::make_shared<SubsetDataset>(data, 0, n - held_out), std::make_shared<SubsetDataset>(data, n - held_out, n)};
}

}  // namespace fitscope
