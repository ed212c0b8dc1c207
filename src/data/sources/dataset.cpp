#include "fitscope/data/sources/dataset.hpp"

#include <ATen/ATen.h>

#include <stdexcept>
#include <string>

#include "error_context.hpp"

namespace fitscope {

Batch collate(const std::vector<Example>& examples) {
  if (examples.empty()) throw std::invalid_argument("cannot collate an empty list of examples");
  std::vector<at::Tensor> data, targets;
  data.reserve(examples.size());
  targets.reserve(examples.size());
  for (const Example& e : examples) {
    data.push_back(e.data);
    targets.push_back(e.target);
  }
  return {at::stack(data), at::stack(targets)};
}

Batch Dataset::get_batch(const std::vector<int64_t>& indices) const {
  std::vector<Example> examples;
  examples.reserve(indices.size());
  for (int64_t index : indices) {
    try {
      examples.push_back(get(index));
    } catch (...) {
      detail::rethrow_with_context("sample " + std::to_string(index) + " of " + source() + ": ");
    }
  }
  return collate(examples);
}

std::vector<int64_t> Dataset::example_shape() const {
  if (size() == 0) return {};
  const auto sizes = get(0).data.sizes();
  return {sizes.begin(), sizes.end()};
}

}  // namespace fitscope
