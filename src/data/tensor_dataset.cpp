#include "fitscope/data/tensor_dataset.hpp"

#include <ATen/ATen.h>

#include <cmath>
#include <stdexcept>
#include <string>

namespace fitscope {

TensorDataset::TensorDataset(at::Tensor inputs, at::Tensor targets)
    : inputs_(std::move(inputs)), targets_(std::move(targets)) {
  if (!inputs_.defined() || !targets_.defined()) {
    throw std::invalid_argument("a data set needs defined inputs and targets");
  }
  if (inputs_.dim() == 0 || targets_.dim() == 0 || inputs_.size(0) != targets_.size(0)) {
    throw std::invalid_argument("inputs and targets must have the same first dimension, got " +
                                std::to_string(inputs_.dim() ? inputs_.size(0) : 0) + " and " +
                                std::to_string(targets_.dim() ? targets_.size(0) : 0));
  }
}

TensorDataset TensorDataset::slice(int64_t begin, int64_t end) const {
  if (begin < 0 || end < begin || end > size()) {
    throw std::out_of_range("slice [" + std::to_string(begin) + ", " + std::to_string(end) +
                            ") outside a data set of " + std::to_string(size()) + " examples");
  }
  TensorDataset out;
  out.inputs_ = inputs_.narrow(0, begin, end - begin);
  out.targets_ = targets_.narrow(0, begin, end - begin);
  return out;
}

std::pair<TensorDataset, TensorDataset> TensorDataset::split(double fraction) const {
  if (!(fraction > 0.0 && fraction < 1.0)) {
    throw std::invalid_argument("validation split must be in (0, 1), got " + std::to_string(fraction));
  }
  const auto held_out = static_cast<int64_t>(std::floor(size() * fraction));
  if (held_out == 0 || held_out == size()) {
    throw std::invalid_argument("validation split " + std::to_string(fraction) + " of " +
                                std::to_string(size()) + " examples leaves an empty part");
  }
  return {slice(0, size() - held_out), slice(size() - held_out, size())};
}

}  // namespace fitscope
