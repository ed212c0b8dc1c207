#include "fitscope/data/sources/tensor_dataset.hpp"

#include <ATen/ATen.h>

#include <cstring>
#include <stdexcept>
#include <string>

#include "split_count.hpp"

namespace fitscope {
namespace {

/// The rows `indices` of `t` as a new tensor: for a contiguous CPU tensor one allocation and a copy per
/// row (index_select dispatches through a generic kernel that costs more than the copy itself for a
/// small batch), else index_select.
at::Tensor gather_rows(const at::Tensor& t, const std::vector<int64_t>& indices) {
  const auto n = static_cast<int64_t>(indices.size());
  if (!t.is_cpu() || !t.is_contiguous() || t.layout() != at::kStrided || t.is_quantized() || t.requires_grad()) {
    const at::Tensor rows = at::from_blob(const_cast<int64_t*>(indices.data()), {n}, at::kLong);
    return t.index_select(0, rows);  // the indices are only read during the gather: no copy of them
  }
  std::vector<int64_t> sizes(t.sizes().begin(), t.sizes().end());
  sizes[0] = n;
  at::Tensor out = at::empty(sizes, t.options());
  const auto row_bytes = static_cast<std::size_t>(t.numel() / t.size(0)) * t.element_size();
  const auto* from = static_cast<const char*>(t.data_ptr());
  auto* to = static_cast<char*>(out.data_ptr());
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(to + static_cast<std::size_t>(i) * row_bytes, from + static_cast<std::size_t>(indices[static_cast<std::size_t>(i)]) * row_bytes,
                row_bytes);
  }
  return out;
}

}  // namespace

TensorDataset::TensorDataset(at::Tensor inputs, at::Tensor targets, std::string source)
    : inputs_(std::move(inputs)), targets_(std::move(targets)), source_(std::move(source)) {
  if (!inputs_.defined() || !targets_.defined()) {
    throw std::invalid_argument("a data set needs defined inputs and targets");
  }
  if (inputs_.dim() == 0 || targets_.dim() == 0 || inputs_.size(0) != targets_.size(0)) {
    throw std::invalid_argument("inputs and targets must have the same first dimension, got " +
                                std::to_string(inputs_.dim() ? inputs_.size(0) : 0) + " and " +
                                std::to_string(targets_.dim() ? targets_.size(0) : 0));
  }
}

Example TensorDataset::get(int64_t index) const {
  if (index < 0 || index >= size()) {
    throw std::out_of_range("example " + std::to_string(index) + " outside " + source_ + " of " +
                            std::to_string(size()) + " examples");
  }
  return {inputs_[index], targets_[index]};
}

Batch TensorDataset::get_batch(const std::vector<int64_t>& indices) const {
  const auto n = static_cast<int64_t>(indices.size());
  if (n == 0) return {inputs_.narrow(0, 0, 0), targets_.narrow(0, 0, 0)};
  bool consecutive = true;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t index = indices[static_cast<std::size_t>(i)];
    if (index < 0 || index >= size()) {
      throw std::out_of_range("example " + std::to_string(index) + " outside " + source_ + " of " +
                              std::to_string(size()) + " examples");
    }
    consecutive = consecutive && index == indices[0] + i;
  }
  if (consecutive) return {inputs_.narrow(0, indices[0], n), targets_.narrow(0, indices[0], n)};
  return {gather_rows(inputs_, indices), gather_rows(targets_, indices)};
}

std::vector<int64_t> TensorDataset::example_shape() const {
  if (!inputs_.defined()) return {};
  const auto sizes = inputs_.sizes();
  return {sizes.begin() + 1, sizes.end()};
}

TensorDataset TensorDataset::unlabeled(at::Tensor inputs, std::string source) {
  if (!inputs.defined() || inputs.dim() == 0) throw std::invalid_argument("a data set needs defined inputs of at least one dimension");
  const int64_t n = inputs.size(0);
  TensorDataset out(std::move(inputs), at::full({n}, -1, at::kLong), std::move(source));
  out.labeled_ = false;
  return out;
}

void TensorDataset::name_by_lines(std::vector<int64_t> lines) {
  if (static_cast<int64_t>(lines.size()) != size()) {
    throw std::invalid_argument(source_ + ": " + std::to_string(lines.size()) + " line numbers for " + std::to_string(size()) + " examples");
  }
  lines_ = std::move(lines);
}

std::string TensorDataset::example_name(int64_t index) const {
  return lines_.empty() ? std::to_string(index) : "line " + std::to_string(lines_.at(static_cast<std::size_t>(index)));
}

TensorDataset TensorDataset::slice(int64_t begin, int64_t end) const {
  if (begin < 0 || end < begin || end > size()) {
    throw std::out_of_range("slice [" + std::to_string(begin) + ", " + std::to_string(end) +
                            ") outside a data set of " + std::to_string(size()) + " examples");
  }
  TensorDataset out;
  out.inputs_ = inputs_.narrow(0, begin, end - begin);
  out.targets_ = targets_.narrow(0, begin, end - begin);
  out.source_ = source_;
  out.labeled_ = labeled_;
  if (!lines_.empty()) out.lines_.assign(lines_.begin() + begin, lines_.begin() + end);
  return out;
}

std::pair<TensorDataset, TensorDataset> TensorDataset::split(double fraction) const {
  const int64_t held_out = detail::held_out_count(size(), fraction, source());
  return {slice(0, size() - held_out), slice(size() - held_out, size())};
}

}  // namespace fitscope
