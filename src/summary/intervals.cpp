#include "fitscope/summary/intervals.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>

namespace fitscope {

SegmentedSeries::SegmentedSeries(int64_t rows, int segments) : rows_(std::max<int64_t>(rows, 0)) {
  if (segments < 2) throw std::invalid_argument("SegmentedSeries: segments " + std::to_string(segments) + " (expected 2 or more)");
  const int64_t k = std::clamp<int64_t>(rows_ / 2, 1, segments);
  sums_.assign(static_cast<std::size_t>(k), 0.0);
  counts_.assign(static_cast<std::size_t>(k), 0);
}

void SegmentedSeries::push(double value) {
  const int64_t k = static_cast<int64_t>(sums_.size());
  const int64_t i = rows_ > 0 ? std::min(k - 1, count_ * k / rows_) : k - 1;  // rows beyond `rows` join the last
  sums_[static_cast<std::size_t>(i)] += value;
  ++counts_[static_cast<std::size_t>(i)];
  ++count_;
}

double SegmentedSeries::mean() const {
  double sum = 0;
  for (double s : sums_) sum += s;
  return count_ > 0 ? sum / static_cast<double>(count_) : 0.0;
}

std::vector<double> SegmentedSeries::segment_means() const {
  std::vector<double> out;
  for (std::size_t i = 0; i < sums_.size(); ++i) {
    if (counts_[i] > 0) out.push_back(sums_[i] / static_cast<double>(counts_[i]));
  }
  return out;
}

namespace {

// The regularized incomplete beta function I_x(a, b) by its continued fraction (Lentz's method).
double beta_continued_fraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300, kEps = 1e-15;
  const auto guard = [](double v) { return std::fabs(v) < kTiny ? kTiny : v; };
  double c = 1, d = 1 / guard(1 - (a + b) * x / (a + 1)), h = d;
  for (int m = 1; m <= 500; ++m) {
    const double even = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m));
    d = 1 / guard(1 + even * d);
    c = guard(1 + even / c);
    h *= d * c;
    const double odd = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1));
    d = 1 / guard(1 + odd * d);
    c = guard(1 + odd / c);
    h *= d * c;
    if (std::fabs(d * c - 1) < kEps) break;
  }
  return h;
}

double incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x));
  if (x < (a + 1) / (a + b + 2)) return front * beta_continued_fraction(a, b, x) / a;
  return 1 - front * beta_continued_fraction(b, a, 1 - x) / b;
}

double student_t_cdf(double t, double df) {
  const double tail = 0.5 * incomplete_beta(df / 2, 0.5, df / (df + t * t));
  return t > 0 ? 1 - tail : tail;
}

double sample_variance(const std::vector<double>& v, double mean) {
  double sum = 0;
  for (double x : v) sum += (x - mean) * (x - mean);
  return v.size() > 1 ? sum / static_cast<double>(v.size() - 1) : 0.0;
}

double average(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? 0.0 : sum / static_cast<double>(v.size());
}

}  // namespace

double student_t_quantile(double p, double df) {
  if (!(p > 0 && p < 1) || !(df > 0)) {
    throw std::invalid_argument("student_t_quantile: p " + std::to_string(p) + ", df " + std::to_string(df) +
                                " (expected 0 < p < 1 and df > 0)");
  }
  if (p == 0.5) return 0;
  if (p < 0.5) return -student_t_quantile(1 - p, df);
  double lo = 0, hi = 1;
  while (student_t_cdf(hi, df) < p && hi < 1e12) hi *= 2;
  for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; ++i) {
    const double mid = (lo + hi) / 2;
    (student_t_cdf(mid, df) < p ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

namespace {

Difference unbounded(Difference d) {
  d.low = -std::numeric_limits<double>::infinity();
  d.high = std::numeric_limits<double>::infinity();
  return d;
}

}  // namespace

Difference welch_difference(double a_mean, const std::vector<double>& sa, double b_mean, const std::vector<double>& sb,
                            double confidence) {
  Difference d;
  d.a = a_mean;
  d.b = b_mean;
  d.change = d.b - d.a;
  if (sa.size() < 2 || sb.size() < 2) return unbounded(d);
  const double na = static_cast<double>(sa.size()), nb = static_cast<double>(sb.size());
  const double wa = sample_variance(sa, average(sa)) / na, wb = sample_variance(sb, average(sb)) / nb;
  const double se = std::sqrt(wa + wb);
  if (se == 0) {  // every value alike on both sides: the change is exact
    d.low = d.high = d.change;
  } else {
    const double df = (wa + wb) * (wa + wb) / (wa * wa / (na - 1) + wb * wb / (nb - 1));  // Welch-Satterthwaite
    const double t = student_t_quantile(1 - (1 - confidence) / 2, df);
    d.low = d.change - t * se;
    d.high = d.change + t * se;
  }
  d.significant = d.low > 0 || d.high < 0;
  return d;
}

Difference compare_series(const SegmentedSeries& a, const SegmentedSeries& b, double confidence) {
  return welch_difference(a.mean(), a.segment_means(), b.mean(), b.segment_means(), confidence);
}

Difference compare_to_repeats(const std::vector<double>& a_run_means, double b_mean, double confidence) {
  Difference d;
  d.a = average(a_run_means);
  d.b = b_mean;
  d.change = d.b - d.a;
  if (a_run_means.size() < 2) return unbounded(d);
  const double n = static_cast<double>(a_run_means.size());
  const double half = student_t_quantile(1 - (1 - confidence) / 2, n - 1) * std::sqrt(sample_variance(a_run_means, d.a) * (1 + 1 / n));
  d.low = d.change - half;
  d.high = d.change + half;
  d.significant = d.low > 0 || d.high < 0;
  return d;
}

Difference compare_run_means(const std::vector<double>& a_run_means, const std::vector<double>& b_run_means, double confidence) {
  if (b_run_means.size() == 1) return compare_to_repeats(a_run_means, b_run_means[0], confidence);
  if (a_run_means.size() == 1) {  // A against B's spread: the same interval, the other way round
    Difference d = compare_to_repeats(b_run_means, a_run_means[0], confidence);
    std::swap(d.a, d.b);
    d.change = -d.change;
    std::tie(d.low, d.high) = std::make_pair(-d.high, -d.low);
    return d;
  }
  return welch_difference(average(a_run_means), a_run_means, average(b_run_means), b_run_means, confidence);  // Welch's t over the runs
}

}  // namespace fitscope
