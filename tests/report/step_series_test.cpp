// steps.csv read down to the report's chart points as it streams: the samples and rolling
// percentiles are those of the whole column, each rank's rows apart, the phases averaged per group.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "report/step_series.hpp"

using namespace fitscope::report;
namespace fs = std::filesystem;

namespace {

/// The p10/p50/p90 of the `window` values centred on `i`, as the report draws them.
std::vector<double> window_quantiles(const std::vector<double>& v, std::size_t i, std::size_t window) {
  const std::size_t half = window / 2, lo = i >= half ? i - half : 0, hi = std::min(v.size(), i + half + 1);
  std::vector<double> w(v.begin() + static_cast<std::ptrdiff_t>(lo), v.begin() + static_cast<std::ptrdiff_t>(hi));
  std::sort(w.begin(), w.end());
  const auto at = [&](double q) { return w[static_cast<std::size_t>(q * static_cast<double>(w.size() - 1))]; };
  return {at(0.1), at(0.5), at(0.9)};
}

fs::path write_csv(const std::string& name, const std::string& text) {
  const fs::path path = fs::temp_directory_path() / ("fitscope-step-series-" + name);
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST(StepSeries, ASampledRollingWindowIsTheWholeColumnsAtEverySampledRow) {
  std::mt19937 random(7);
  std::uniform_real_distribution<double> ms(1.0, 50.0);
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{20}, std::size_t{1000}}) {
    std::vector<double> v(n);
    for (double& x : v) x = ms(random);
    RollingSample sample(7, 51);
    for (const double x : v) sample.push(x);
    sample.finish();
    ASSERT_EQ(sample.x.size(), (n + 6) / 7) << n;
    for (std::size_t k = 0; k < sample.x.size(); ++k) {
      const std::size_t i = k * 7;
      EXPECT_EQ(sample.x[k], static_cast<double>(i));
      EXPECT_EQ(sample.value[k], v[i]);
      const std::vector<double> q = window_quantiles(v, i, 51);
      EXPECT_EQ(sample.p10[k], q[0]) << "row " << i << " of " << n;
      EXPECT_EQ(sample.p50[k], q[1]) << "row " << i << " of " << n;
      EXPECT_EQ(sample.p90[k], q[2]) << "row " << i << " of " << n;
    }
  }
}

TEST(StepSeries, EachRanksRowsAreSampledApartAndThePhasesThatTookTimeAveragedPerGroup) {
  std::string text = "step,rank,step_ms,data_wait_ms,forward_ms,comm_ms\n";
  for (int step = 0; step < 10; ++step) {
    for (int rank = 0; rank < 2; ++rank) {
      text += std::to_string(step) + "," + std::to_string(rank) + "," + std::to_string(10 * rank + step) + ",0.5," +
              std::to_string(step) + ",0\n";
    }
  }
  const fs::path path = write_csv("ranks.csv", text);
  const auto ranks = read_step_series(path, {"forward_ms", "backward_ms", "comm_ms"}, /*max_points=*/5, /*max_groups=*/3, /*window=*/3);
  ASSERT_EQ(ranks.size(), 2u);
  const RankSteps& chief = ranks.at(0.0);
  EXPECT_EQ(chief.rows, 10u);
  EXPECT_EQ(chief.step_ms.x, (std::vector<double>{0, 2, 4, 6, 8}));  // stride 10 / 5
  EXPECT_EQ(chief.step_ms.value, (std::vector<double>{0, 2, 4, 6, 8}));
  EXPECT_EQ(ranks.at(1.0).step_ms.value, (std::vector<double>{10, 12, 14, 16, 18}));
  EXPECT_TRUE(chief.has_data_wait);
  EXPECT_EQ(chief.data_wait_ms.p50, std::vector<double>(5, 0.5));
  // groups of 4 steps (10 / 3, up): the forward means; comm never took time, backward is not in the file
  EXPECT_EQ(chief.group, 4u);
  EXPECT_EQ(chief.group_x, (std::vector<double>{0, 4, 8}));
  ASSERT_EQ(chief.phases.size(), 1u);
  EXPECT_EQ(chief.phases[0].first, "forward_ms");
  EXPECT_EQ(chief.phases[0].second, (std::vector<double>{1.5, 5.5, 8.5}));
  fs::remove(path);
}

TEST(StepSeries, ARowOfAnotherLengthOrAFileWithoutStepTimesIsNamed) {
  const fs::path short_row = write_csv("short.csv", "step,step_ms\n0,1.5\n1\n");
  try {
    read_step_series(short_row, {});
    ADD_FAILURE() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), short_row.string() + ": line 3: 1 fields, expected 2 like the header");
  }
  const fs::path no_steps = write_csv("no-steps.csv", "step,loss\n0,1.5\n");
  EXPECT_THROW(read_step_series(no_steps, {}), std::invalid_argument);
  fs::remove(short_row);
  fs::remove(no_steps);
}
