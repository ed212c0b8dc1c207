#include "fitscope/timing/streaming_quantiles.hpp"

#include <algorithm>
#include <cmath>

namespace fitscope {
namespace {
// Buckets grow by 1% from 1 ns: bucket b (b >= 1) covers [kGrowth^(b-1), kGrowth^b) ns.
// 3000 buckets reach kGrowth^3000 ~ 9e12 ns (2.5 hours), beyond any step.
constexpr double kGrowth = 1.01;
constexpr std::size_t kBuckets = 3000;
const double kLogGrowth = std::log(kGrowth);
}  // namespace

StreamingQuantiles::StreamingQuantiles() : buckets_(kBuckets + 1, 0) {}

std::size_t StreamingQuantiles::bucket_of(int64_t value) {
  if (value <= 0) return 0;
  const auto b = static_cast<std::size_t>(std::log(static_cast<double>(value)) / kLogGrowth) + 1;
  return std::min(b, kBuckets);
}

double StreamingQuantiles::bucket_value(std::size_t bucket) {
  if (bucket == 0) return 0.0;
  // geometric middle of the bucket
  return std::exp((static_cast<double>(bucket) - 0.5) * kLogGrowth);
}

void StreamingQuantiles::add(int64_t value_ns) {
  value_ns = std::max<int64_t>(value_ns, 0);
  ++buckets_[bucket_of(value_ns)];
  if (count_ == 0) {
    min_ = max_ = value_ns;
  } else {
    min_ = std::min(min_, value_ns);
    max_ = std::max(max_, value_ns);
  }
  ++count_;
  sum_ += value_ns;
}

void StreamingQuantiles::merge(const StreamingQuantiles& other) {
  if (other.count_ == 0) return;
  for (std::size_t i = 0; i < buckets_.size(); ++i) buckets_[i] += other.buckets_[i];
  if (count_ == 0) {
    min_ = other.min_;
    max_ = other.max_;
  } else {
    min_ = std::min(min_, other.min_);
    max_ = std::max(max_, other.max_);
  }
  count_ += other.count_;
  sum_ += other.sum_;
}

double StreamingQuantiles::quantile(double q) const {
  if (count_ == 0) return 0.0;
  q = std::clamp(q, 0.0, 1.0);
  // nearest rank: the smallest value with at least ceil(q * n) values at or below it
  const auto rank = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(q * count_)));
  int64_t seen = 0;
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    seen += buckets_[b];
    if (seen >= rank) {
      return std::clamp(bucket_value(b), static_cast<double>(min_), static_cast<double>(max_));
    }
  }
  return static_cast<double>(max_);
}

}  // namespace fitscope
