#pragma once
// What the benchmarks share: medians, and ratios measured in alternating rounds in one process.

#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

namespace fitscope::bench {

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

inline double seconds(const std::function<void()>& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// Median over `rounds` of time(b) / time(a), after one untimed run of each; which goes first
/// alternates, so slow drifts of the machine hit both alike.
inline double paired_ratio(int rounds, const std::function<void()>& a, const std::function<void()>& b) {
  a();
  b();
  std::vector<double> ratios;
  for (int r = 0; r < rounds; ++r) {
    double ta, tb;
    if (r % 2 == 0) {
      ta = seconds(a);
      tb = seconds(b);
    } else {
      tb = seconds(b);
      ta = seconds(a);
    }
    ratios.push_back(tb / ta);
  }
  return median(ratios);
}

}  // namespace fitscope::bench
