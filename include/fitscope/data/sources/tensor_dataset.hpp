#pragma once
/// TensorDataset: a data set held in memory as two tensors, inputs [N, ...] and targets [N, ...].
/// Immutable after construction; slices share storage with the original. Thread-safe for reading.
/// get_batch() is one gather (or a view for consecutive indices), not N copies.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "fitscope/data/sources/dataset.hpp"

namespace fitscope {

class TensorDataset : public Dataset {
 public:
  TensorDataset() = default;
  /// Throws std::invalid_argument when the first dimensions differ or a tensor is undefined.
  /// `source` names the data in messages.
  TensorDataset(at::Tensor inputs, at::Tensor targets, std::string source = "tensors");

  int64_t size() const override { return inputs_.defined() ? inputs_.size(0) : 0; }
  Example get(int64_t index) const override;
  Batch get_batch(const std::vector<int64_t>& indices) const override;
  std::string source() const override { return source_; }
  std::vector<int64_t> example_shape() const override;

  /// Examples without targets (data to predict): their targets are -1 and labeled() is false.
  static TensorDataset unlabeled(at::Tensor inputs, std::string source = "tensors");
  bool labeled() const override { return labeled_; }
  bool in_memory() const override { return true; }
  /// Names the examples by their lines in the source file ("line 12"), one per example, before the
  /// data set is shared; by their index without.
  void name_by_lines(std::vector<int64_t> lines);
  std::string example_name(int64_t index) const override;
  const at::Tensor& inputs() const { return inputs_; }
  const at::Tensor& targets() const { return targets_; }

  /// Examples [begin, end) as a view.
  TensorDataset slice(int64_t begin, int64_t end) const;
  /// Keras's validation_split: the last `fraction` of the examples (taken before any shuffling)
  /// become the second set. Throws std::invalid_argument unless 0 < fraction < 1 and both parts are
  /// non-empty.
  std::pair<TensorDataset, TensorDataset> split(double fraction) const;

 private:
  at::Tensor inputs_;
  at::Tensor targets_;
  std::string source_ = "tensors";
  bool labeled_ = true;
  std::vector<int64_t> lines_;  // each example's line in its file; empty = none
};

}  // namespace fitscope
