#pragma once
/// Intervals of a difference of means, for comparing runs (summary/comparison.hpp): batch means of one
/// run's steps (SegmentedSeries), Student's t, Welch's interval, and the prediction interval of one more
/// run of a setting. Values; pure functions; thread-safe.

#include <cstdint>
#include <vector>

namespace fitscope {

/// One part's per-step values over a run's measured steps, kept as the means of consecutive stretches:
/// memory independent of the run's length.
class SegmentedSeries {
 public:
  /// `rows` values will be pushed in step order into `segments` stretches of equal length (fewer when
  /// there are fewer than two values a stretch). Throws std::invalid_argument when segments < 2.
  SegmentedSeries(int64_t rows, int segments);
  void push(double value);
  int64_t count() const { return count_; }
  double mean() const;
  /// The stretches' means (those that got a value).
  std::vector<double> segment_means() const;

 private:
  int64_t rows_;
  std::vector<double> sums_;
  std::vector<int64_t> counts_;
  int64_t count_ = 0;
};

/// The quantile of Student's t distribution with `df` degrees of freedom at probability `p` (0 < p < 1).
double student_t_quantile(double p, double df);

/// B's mean less A's, in ms per step, with its interval.
struct Difference {
  double a = 0, b = 0;       ///< the runs' means
  double change = 0;         ///< b - a
  double low = 0, high = 0;  ///< the interval of `change`
  bool significant = false;  ///< the interval excludes 0
};

/// The difference of two series' means with Welch's interval over their stretches' means at
/// `confidence`. Too few stretches (under 2 in either) leave the interval unbounded and not significant.
Difference compare_series(const SegmentedSeries& a, const SegmentedSeries& b, double confidence);

/// B's mean against the means of n runs of A's settings: the change from their mean, with the prediction
/// interval of one more such run at `confidence` (t with n - 1 degrees of freedom x their standard
/// deviation x sqrt(1 + 1/n)). Fewer than 2 runs leave the interval unbounded and not significant.
Difference compare_to_repeats(const std::vector<double>& a_run_means, double b_mean, double confidence);

/// Runs of A against runs of B, by their means: with one run on a side, the prediction interval of the
/// other side's runs (compare_to_repeats); with two or more on each, Welch's t over the runs' means.
Difference compare_run_means(const std::vector<double>& a_run_means, const std::vector<double>& b_run_means, double confidence);

/// Welch's interval of the difference of two means over the values they are the mean of (two runs'
/// stretches' means, or two groups of runs' means): `a_mean` and `b_mean` are the means (a run's over
/// its steps, which its stretches' means need not average to exactly). Under 2 values on a side leave
/// the interval unbounded and not significant.
Difference welch_difference(double a_mean, const std::vector<double>& a_values, double b_mean, const std::vector<double>& b_values,
                            double confidence);

}  // namespace fitscope
