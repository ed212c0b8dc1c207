#include "fitscope/timing/streaming_quantiles.hpp"

#include <algorithm>
#include <cmath>

namespace fitscope {
namespace {
// Log-linear buckets without a logarithm (HDR histogram style): values below 128 ns have a bucket each;
// above, every power of two [2^e, 2^(e+1)) is split into 64 equal sub-buckets, found from the value's
// leading bit and the 6 bits after it. A sub-bucket is at most 1/64 of its lower edge wide, so its
// middle is within 0.8 % of any value in it. 2^44 ns (~4.9 hours) and beyond share the last bucket.
constexpr int kSubBits = 6;
constexpr int64_t kSub = int64_t{1} << kSubBits;  // 64
constexpr int kMaxExponent = 44;
constexpr std::size_t kBuckets = 2 * kSub + static_cast<std::size_t>(kMaxExponent - kSubBits - 1) * kSub;
}  // namespace

StreamingQuantiles::StreamingQuantiles() : buckets_(kBuckets, 0) {}

std::size_t StreamingQuantiles::bucket_of(int64_t value) {
  if (value < 2 * kSub) return static_cast<std::size_t>(std::max<int64_t>(value, 0));
  const int exponent = 63 - __builtin_clzll(static_cast<uint64_t>(value));  // >= 7
  if (exponent >= kMaxExponent) return kBuckets - 1;
  const int64_t sub = (value >> (exponent - kSubBits)) - kSub;  // 0..63
  return static_cast<std::size_t>(2 * kSub + (exponent - kSubBits - 1) * kSub + sub);
}

double StreamingQuantiles::bucket_value(std::size_t bucket) {
  if (bucket < static_cast<std::size_t>(2 * kSub)) return static_cast<double>(bucket);
  const int64_t rest = static_cast<int64_t>(bucket) - 2 * kSub;
  const int exponent = static_cast<int>(rest / kSub) + kSubBits + 1;
  const int64_t sub = rest % kSub;
  const double width = std::ldexp(1.0, exponent - kSubBits);
  return (kSub + sub) * width + width / 2;  // middle of [(64 + sub) w, (65 + sub) w)
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
