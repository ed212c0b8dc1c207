#pragma once
/// StreamingQuantiles: mean, max and approximate quantiles of a stream of non-negative durations in
/// constant memory and O(1) per value: a log-linear histogram (exact below 128 ns, then 64 buckets per
/// power of two), so a quantile is within 1% of the exact order statistic (and clamped to the observed
/// min and max).
///
/// A plain value type; not thread-safe. Two histograms merge exactly (for per-rank reduction).

#include <cstdint>
#include <vector>

namespace fitscope {

class StreamingQuantiles {
 public:
  StreamingQuantiles();

  /// Adds one value (nanoseconds; negative values count as 0).
  void add(int64_t value_ns);
  /// Adds every value of `other`.
  void merge(const StreamingQuantiles& other);

  int64_t count() const { return count_; }
  /// Mean in nanoseconds (0 when empty).
  double mean() const { return count_ ? static_cast<double>(sum_) / count_ : 0.0; }
  /// Largest value (0 when empty).
  int64_t max() const { return count_ ? max_ : 0; }
  /// Smallest value (0 when empty).
  int64_t min() const { return count_ ? min_ : 0; }
  /// The q-quantile (q in [0, 1]) in nanoseconds, by the nearest-rank rule (0 when empty).
  double quantile(double q) const;

 private:
  static std::size_t bucket_of(int64_t value);
  static double bucket_value(std::size_t bucket);

  std::vector<int64_t> buckets_;
  int64_t count_ = 0;
  int64_t sum_ = 0;
  int64_t max_ = 0;
  int64_t min_ = 0;
};

}  // namespace fitscope
