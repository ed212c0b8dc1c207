#include "fitscope/summary/comparison.hpp"
#include "fitscope/report/comparison_page.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <sstream>

namespace {

namespace comparison_test {

// `n` step times around `mean` ms, autocorrelated (AR(1), coefficient `phi`) and skewed (a log-normal
// factor), as a busy machine makes them
std::vector<double> steps(std::mt19937_64& rng, int n, double mean, double phi) {
  std::normal_distribution<double> noise(0, 1);
  std::vector<double> out;
  double state = 0;
  for (int i = 0; i < n; ++i) {
    state = phi * state + std::sqrt(1 - phi * phi) * noise(rng);
    out.push_back(mean * std::exp(0.1 * state) / std::exp(0.005));  // / exp(sigma^2 / 2): the mean stays `mean`
  }
  return out;
}

fitscope::SegmentedSeries series(const std::vector<double>& values, int segments = 10) {
  fitscope::SegmentedSeries s(static_cast<int64_t>(values.size()), segments);
  for (double v : values) s.push(v);
  return s;
}

}  // namespace comparison_test

using fitscope::compare_series;
using fitscope::SegmentedSeries;
using namespace comparison_test;

}  // namespace

TEST(Comparison, StudentsTQuantilesMatchTheTables) {
  EXPECT_NEAR(fitscope::student_t_quantile(0.975, 1), 12.706, 1e-3);
  EXPECT_NEAR(fitscope::student_t_quantile(0.975, 10), 2.228, 1e-3);
  EXPECT_NEAR(fitscope::student_t_quantile(0.975, 30), 2.042, 1e-3);
  EXPECT_NEAR(fitscope::student_t_quantile(0.995, 5), 4.032, 1e-3);
  EXPECT_NEAR(fitscope::student_t_quantile(0.975, 1e6), 1.960, 1e-3);
  EXPECT_NEAR(fitscope::student_t_quantile(0.025, 10), -2.228, 1e-3);
  EXPECT_NEAR(fitscope::student_t_quantile(0.9995, 2.5), 18.2779, 1e-3);  // a fractional Welch df (the pdf integrated)
  EXPECT_THROW(fitscope::student_t_quantile(1, 10), std::invalid_argument);
}

TEST(Comparison, ASeriesKeepsTheMeansOfEqualStretchesInStepOrder) {
  SegmentedSeries s(100, 10);
  for (int i = 0; i < 100; ++i) s.push(i / 10);  // stretch k holds ten k's
  const std::vector<double> means = s.segment_means();
  ASSERT_EQ(means.size(), 10u);
  for (int k = 0; k < 10; ++k) EXPECT_DOUBLE_EQ(means[static_cast<std::size_t>(k)], k);
  EXPECT_DOUBLE_EQ(s.mean(), 4.5);
  SegmentedSeries few(5, 10);  // two values a stretch at least
  for (int i = 0; i < 7; ++i) few.push(1);  // rows beyond the count join the last stretch
  EXPECT_EQ(few.segment_means().size(), 2u);
  EXPECT_EQ(few.count(), 7);
  EXPECT_THROW(SegmentedSeries(10, 1), std::invalid_argument);
}

// On autocorrelated, skewed step times, two runs of one distribution are called different about as often
// as the confidence allows, and a 5 % slowdown is found with an interval that holds it: single steps
// taken as independent would call most identical pairs different.
TEST(Comparison, BatchMeansHoldTheirConfidenceOnAutocorrelatedStepsAndFindAFivePercentSlowdown) {
  std::mt19937_64 rng(7);
  int false_alarms = 0, found = 0, covered = 0, naive_alarms = 0;
  constexpr int kTrials = 200;
  for (int t = 0; t < kTrials; ++t) {
    const std::vector<double> a = steps(rng, 1000, 10.0, 0.7), same = steps(rng, 1000, 10.0, 0.7), slower = steps(rng, 1000, 10.5, 0.7);
    const fitscope::Difference d = compare_series(series(a), series(same), 0.95);
    false_alarms += d.significant;
    const fitscope::Difference s = compare_series(series(a), series(slower), 0.95);
    found += s.significant && s.change > 0;
    covered += s.low <= 0.5 && 0.5 <= s.high;
    // the same pairs in stretches of two steps: nearly the interval of independent steps
    naive_alarms += compare_series(series(a, 500), series(same, 500), 0.95).significant;
  }
  EXPECT_LE(false_alarms, kTrials * 10 / 100) << "identical pairs called different";
  EXPECT_GE(found, kTrials * 80 / 100) << "5 % slowdowns found";
  EXPECT_GE(covered, kTrials * 85 / 100) << "intervals holding the true change";
  EXPECT_GT(naive_alarms, 2 * false_alarms) << "independent steps would understate the spread";
}

namespace {
namespace comparison_test {

// a run's phases (data_wait, forward, comm, and h2d that never runs); with `rank_work`, one rank per entry
// whose forward takes that many ms a step
fitscope::RunSeries run(std::mt19937_64& rng, double data_wait, double comm, const std::vector<double>& rank_work) {
  fitscope::RunSeries r;
  const int n = 400;
  r.step = SegmentedSeries(n, 10);
  r.phases = {{"data_wait", SegmentedSeries(n, 10)}, {"forward", SegmentedSeries(n, 10)}, {"comm", SegmentedSeries(n, 10)},
              {"h2d", SegmentedSeries(n, 10)}};
  for (std::size_t k = 0; k < rank_work.size(); ++k) r.ranks.push_back({static_cast<int64_t>(k), {{"forward", SegmentedSeries(n, 10)}}});
  const std::vector<double> w = steps(rng, n, data_wait, 0.5), f = steps(rng, n, 2.0, 0.5), c = steps(rng, n, comm, 0.5);
  for (int i = 0; i < n; ++i) {
    r.step.push(w[static_cast<std::size_t>(i)] + f[static_cast<std::size_t>(i)] + c[static_cast<std::size_t>(i)]);
    r.phases[0].second.push(w[static_cast<std::size_t>(i)]);
    r.phases[1].second.push(f[static_cast<std::size_t>(i)]);
    r.phases[2].second.push(c[static_cast<std::size_t>(i)]);
    r.phases[3].second.push(0);
  }
  for (std::size_t k = 0; k < rank_work.size(); ++k) {
    for (double v : steps(rng, n, rank_work[k], 0.5)) r.ranks[k].phases[0].second.push(v);
  }
  return r;
}

}  // namespace comparison_test
}  // namespace

TEST(Comparison, AttributesTheChangeToThePartThatMadeItAndToARankTheOthersWaitedFor) {
  std::mt19937_64 rng(3);
  // a slower loader: data_wait, all of the step's change; the phase that never ran is left out
  fitscope::RunSeries a = run(rng, 0.2, 0.1, {}), b = run(rng, 1.2, 0.1, {});
  a.settings = {{"load-delay-ms", "0", "config.toml"}, {"model", "mlp", "config.toml"}};
  b.settings = {{"load-delay-ms", "1", "config.toml"}, {"model", "mlp", "config.toml"}};
  a.callbacks = {{"CSVLogger", "on_epoch_end", 0.01}};
  b.callbacks = {{"CSVLogger", "on_epoch_end", 0.01}, {"Slow", "on_train_batch_end", 0.3}};
  const fitscope::Comparison c = fitscope::compare(a, b);
  EXPECT_EQ(c.direction(), "slower");
  EXPECT_EQ(c.attributed_to(), "data_wait");
  ASSERT_EQ(c.parts.size(), 3u);  // h2d never ran
  EXPECT_EQ(c.parts[0].part, "data_wait");
  EXPECT_NEAR(c.parts[0].share_of_change, 1.0, 0.15);
  EXPECT_NEAR(c.part_confidence, 1 - 0.05 / 3, 1e-12);
  ASSERT_EQ(c.settings.size(), 1u);
  EXPECT_EQ(c.settings[0].name, "load-delay-ms");
  EXPECT_EQ(c.settings[0].b, "1");
  ASSERT_EQ(c.callbacks.size(), 2u);
  EXPECT_EQ(c.callbacks[0].name, "Slow");  // the largest change first
  EXPECT_EQ(c.callbacks[0].a_ms_per_step, 0.0);

  // rank 1's forward grew and rank 0 waited for it in comm: the rank's phase is named, not comm
  const fitscope::RunSeries two_a = run(rng, 0.2, 0.1, {2.3, 2.3}), two_b = run(rng, 0.2, 1.1, {2.3, 3.3});
  const fitscope::Comparison ranks = fitscope::compare(two_a, two_b);
  EXPECT_EQ(ranks.direction(), "slower");
  EXPECT_EQ(ranks.attributed_to(), "rank 1 forward");
  EXPECT_NE(fitscope::format_comparison(ranks).find("Attributed to rank 1 forward: +"), std::string::npos);
  // every rank slower alike is not one rank's doing: the phase is named
  const fitscope::RunSeries all_b = run(rng, 1.2, 0.1, {3.3, 3.3});
  EXPECT_EQ(fitscope::compare(two_a, all_b).attributed_to(), "data_wait");

  // the loader slower and the compute faster at once (another run's noise): the step is faster, and
  // what grew is named all the same
  fitscope::RunSeries faster_compute = run(rng, 1.2, 0.1, {});
  for (auto& [name, series] : faster_compute.phases) {
    if (name != "forward") continue;
    series = SegmentedSeries(400, 10);
    for (int i = 0; i < 400; ++i) series.push(0.5);
  }
  faster_compute.step = SegmentedSeries(400, 10);
  for (int i = 0; i < 400; ++i) faster_compute.step.push(1.2 + 0.5 + 0.1);
  const fitscope::Comparison mixed = fitscope::compare(a, faster_compute);
  EXPECT_EQ(mixed.direction(), "faster");
  EXPECT_EQ(mixed.attributed_to(), "forward");
  EXPECT_EQ(mixed.largest_increase(), "data_wait");
  EXPECT_NE(fitscope::format_comparison(mixed).find("Slower in B all the same: data_wait +"), std::string::npos);

  // a run against itself: no change, nothing attributed
  const fitscope::Comparison same = fitscope::compare(a, a);
  EXPECT_EQ(same.direction(), "no significant change");
  EXPECT_EQ(same.attributed_to(), "");
  EXPECT_EQ(same.largest_increase(), "");
  EXPECT_TRUE(same.settings.empty());
  const std::string text = fitscope::format_comparison(same);
  EXPECT_NE(text.find("no significant change"), std::string::npos) << text;
  EXPECT_NE(text.find("Settings: the same in both runs."), std::string::npos) << text;
}

// Two runs of the same settings differ by more than either run's steps show: a change within the
// noise floor (ComparisonOptions::noise_floor of A's step) is not called one, however tight its interval.
TEST(Comparison, AChangeWithinTheNoiseFloorIsNotCalledOneHoweverTightItsInterval) {
  const auto flat = [](double ms) {  // 400 steps a hair apart: an interval a hundredth of the change wide
    fitscope::RunSeries r;
    r.step = SegmentedSeries(400, 10);
    r.phases = {{"forward", SegmentedSeries(400, 10)}};
    for (int i = 0; i < 400; ++i) {
      r.step.push(ms + (i % 2 ? 1e-4 : -1e-4));
      r.phases[0].second.push(ms + (i % 2 ? 1e-4 : -1e-4));
    }
    return r;
  };
  const fitscope::RunSeries a = flat(2.0), b = flat(2.04);  // B 2 % slower
  const fitscope::Comparison floored = fitscope::compare(a, b);  // the default floor, 3 %
  EXPECT_NEAR(floored.noise_floor_ms, 0.06, 1e-9);
  EXPECT_GT(floored.step.low, 0) << "the interval alone would call it";
  EXPECT_EQ(floored.direction(), "no significant change");
  EXPECT_EQ(floored.largest_increase(), "");
  EXPECT_NE(fitscope::format_comparison(floored).find("the noise floor +-3.0%"), std::string::npos);
  fitscope::ComparisonOptions intervals_alone;
  intervals_alone.noise_floor = 0;
  const fitscope::Comparison judged = fitscope::compare(a, b, intervals_alone);
  EXPECT_EQ(judged.direction(), "slower");
  EXPECT_EQ(judged.attributed_to(), "forward");
  const fitscope::Comparison far = fitscope::compare(a, flat(2.2));  // 10 %: beyond the floor
  EXPECT_EQ(far.direction(), "slower");
  intervals_alone.noise_floor = 1;
  EXPECT_THROW(fitscope::compare(a, b, intervals_alone), std::invalid_argument);
}

TEST(Comparison, ThePrintoutsTablesFitEightyColumnsAndTheJsonSaysWhatTheTextSays) {
  std::mt19937_64 rng(5);
  const fitscope::RunSeries a = run(rng, 0.2, 0.1, {}), b = run(rng, 1.2, 0.1, {});
  const fitscope::Comparison c = fitscope::compare(a, b);
  std::istringstream lines(fitscope::format_comparison(c));
  bool table = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("part ", 0) == 0) table = true;
    if (line.empty()) table = false;
    if (table) EXPECT_LE(line.size(), 80u) << line;
  }
  const std::string json = c.to_json();
  EXPECT_NE(json.find("\"attributed_to\": \"data_wait\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"direction\": \"slower\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"segments\": 10"), std::string::npos) << json;
}

// A run that met other processes' load is named, with its side and what its verdict said of the load,
// in the printout, the JSON and the page; runs on a quiet machine are not.
TEST(Comparison, NamesTheRunsThatMetOtherLoad) {
  std::mt19937_64 rng(19);
  std::vector<fitscope::RunSeries> a{run(rng, 0.2, 0.1, {}), run(rng, 0.2, 0.1, {})}, b{run(rng, 0.2, 0.1, {}), run(rng, 0.2, 0.1, {})};
  for (std::size_t i = 0; i < 2; ++i) {
    a[i].run.directory = "a" + std::to_string(i + 1);
    b[i].run.directory = "b" + std::to_string(i + 1);
  }
  EXPECT_TRUE(fitscope::compare(a, b).loaded_runs().empty());
  a[1].run.machine = "other processes kept 0.68 cores busy on the 2 this process may use (its own threads 1.31)";
  const fitscope::Comparison c = fitscope::compare(a, b);
  ASSERT_EQ(c.loaded_runs().size(), 1u);
  EXPECT_EQ(c.loaded_runs()[0].first, "A");
  EXPECT_EQ(c.loaded_runs()[0].second->directory, "a2");
  const std::string text = fitscope::format_comparison(c);
  EXPECT_NE(text.find("Met other load: a2 (A): other processes kept 0.68 cores busy"), std::string::npos) << text;
  EXPECT_EQ(text.find("Met other load: a1"), std::string::npos) << text;
  EXPECT_NE(c.to_json().find("\"machine\": \"other processes kept 0.68 cores busy"), std::string::npos);
  EXPECT_NE(fitscope::comparison_html(c).find("Met other load: a2 (A): other processes kept 0.68"), std::string::npos);
}

// Runs whose stretches say nothing of their own noise: the prediction interval of one more run. Runs that
// agree within their own steps: close to Welch's over the stretches, with its degrees of freedom, so a
// change the runs' means alone (t with 2 degrees of freedom) would miss is found.
TEST(Comparison, AgainstRepeatsOfAnIntervalIsThePredictionIntervalOfOneMoreRun) {
  const fitscope::Difference d = fitscope::compare_to_repeats({1, 2, 3}, 5, 0.95);
  EXPECT_DOUBLE_EQ(d.a, 2);
  EXPECT_DOUBLE_EQ(d.change, 3);
  const double half = 4.302653 * 1.0 * std::sqrt(1 + 1.0 / 3);  // t(0.975, 2) x sd x sqrt(1 + 1/n)
  EXPECT_NEAR(d.low, 3 - half, 1e-5);
  EXPECT_NEAR(d.high, 3 + half, 1e-5);
  EXPECT_FALSE(d.significant);
  EXPECT_TRUE(fitscope::compare_to_repeats({1, 2, 3}, 8.5, 0.95).significant);
  const fitscope::Difference one = fitscope::compare_to_repeats({2}, 5, 0.95);
  EXPECT_FALSE(one.significant);
  EXPECT_TRUE(std::isinf(one.high));
}

namespace {
namespace comparison_test {

// A run whose compute (forward) drifts from run to run by a factor of its own (another run's memory
// layout, clock and neighbours: sd `run_noise`), beside a quiet data_wait; 400 steps, 10 stretches
fitscope::RunSeries drifting_run(std::mt19937_64& rng, double data_wait, double run_noise) {
  std::normal_distribution<double> factor(0, run_noise);
  const double forward = 4.0 * std::exp(factor(rng));
  fitscope::RunSeries r;
  const int n = 400;
  r.step = SegmentedSeries(n, 10);
  r.phases = {{"data_wait", SegmentedSeries(n, 10)}, {"forward", SegmentedSeries(n, 10)}};
  const std::vector<double> w = steps(rng, n, data_wait, 0.5), f = steps(rng, n, forward, 0.5);
  for (std::size_t i = 0; i < w.size(); ++i) {
    r.step.push(w[i] + f[i]);
    r.phases[0].second.push(w[i]);
    r.phases[1].second.push(f[i]);
  }
  return r;
}

}  // namespace comparison_test
}  // namespace

// Runs of one setting differ by more than their steps show. Against one run of A, batch means without
// a floor call most identical runs changed; against three runs of A, each part is judged by its own
// measured spread: identical runs are quiet about as often as the confidence says, and a 5 % slower
// loader is named though the compute's run-to-run noise is twice that.
TEST(Comparison, RepeatsOfAJudgeEachPartAgainstItsOwnRunToRunSpread) {
  std::mt19937_64 rng(11);
  fitscope::ComparisonOptions no_floor;
  no_floor.noise_floor = 0;
  constexpr int kTrials = 200;
  int one_run_alarms = 0, repeat_alarms = 0, part_alarms = 0, found = 0;
  for (int t = 0; t < kTrials; ++t) {
    const std::vector<fitscope::RunSeries> a = {drifting_run(rng, 0.5, 0.1), drifting_run(rng, 0.5, 0.1), drifting_run(rng, 0.5, 0.1)};
    const fitscope::RunSeries same = drifting_run(rng, 0.5, 0.1), slower = drifting_run(rng, 0.75, 0.1);  // +0.25 ms: 5 % of 4.5
    one_run_alarms += fitscope::compare(a[0], same, no_floor).direction() != "no significant change";
    const fitscope::Comparison quiet = fitscope::compare(a, {same});
    repeat_alarms += quiet.direction() != "no significant change";
    part_alarms += !quiet.largest_increase().empty();
    found += fitscope::compare(a, {slower}).largest_increase() == "data_wait";
  }
  EXPECT_GT(one_run_alarms, kTrials / 2) << "one run of A and no floor: most identical runs called changed";
  EXPECT_LE(repeat_alarms, kTrials * 9 / 100) << "identical runs against three runs of A";
  EXPECT_LE(part_alarms, kTrials * 9 / 100) << "a part called grown in identical runs";
  EXPECT_GE(found, kTrials * 90 / 100) << "a 5 % slower loader named against three runs of A";

  const std::vector<fitscope::RunSeries> a = {drifting_run(rng, 0.5, 0.1), drifting_run(rng, 0.5, 0.1)};
  const fitscope::Comparison c = fitscope::compare(a, {drifting_run(rng, 0.5, 0.1)});
  EXPECT_EQ(c.runs_of_a(), 2);
  EXPECT_EQ(c.noise_floor_ms, 0.0);
  EXPECT_EQ(c.noise_text(), "the spread of A's 2 runs");
  EXPECT_NE(c.method().find("t with 1 degrees of freedom"), std::string::npos) << c.method();
  EXPECT_NE(c.to_json().find("\"runs_of_a\": 2"), std::string::npos);
  EXPECT_NE(fitscope::format_comparison(c).find("from the spread of A's 2 runs"), std::string::npos) << fitscope::format_comparison(c);
  EXPECT_THROW(fitscope::compare(std::vector<fitscope::RunSeries>{}, {a[0]}), std::invalid_argument);
}

// Two ranks on a busy machine: their forward is noisy, step by step and rank by rank, and load slows
// both alike; a rank's slow loader is its data_wait against the other rank's in the same stretches, a
// quiet part, where its own work (forward and data_wait) would be lost in the forward's noise.
TEST(Comparison, ADelayedRankIsFoundInItsOwnPhaseAgainstTheOtherRanksInTheSameStretches) {
  std::mt19937_64 rng(13);
  std::normal_distribution<double> noise(0, 1.0);
  const auto two_ranks = [&](double delay_of_rank_1) {
    fitscope::RunSeries r;
    const int n = 400;
    r.step = SegmentedSeries(n, 10);
    r.phases = {{"data_wait", SegmentedSeries(n, 10)}, {"forward", SegmentedSeries(n, 10)}, {"comm", SegmentedSeries(n, 10)}};
    for (int64_t k = 0; k < 2; ++k) {
      r.ranks.push_back({k, {{"data_wait", SegmentedSeries(n, 10)}, {"forward", SegmentedSeries(n, 10)}, {"comm", SegmentedSeries(n, 10)}}});
    }
    const double run_load = std::fabs(noise(rng));  // the run's own neighbours, ms a step
    for (int i = 0; i < n; ++i) {
      const double wait[2] = {0.05 + 0.01 * std::fabs(noise(rng)), 0.05 + 0.01 * std::fabs(noise(rng)) + delay_of_rank_1};
      const double forward[2] = {std::max(0.5, 5.0 + run_load + noise(rng)), std::max(0.5, 5.0 + run_load + noise(rng))};
      const double step = std::max(wait[0] + forward[0], wait[1] + forward[1]) + 0.2;
      for (std::size_t k = 0; k < 2; ++k) {
        r.ranks[k].phases[0].second.push(wait[k]);
        r.ranks[k].phases[1].second.push(forward[k]);
        r.ranks[k].phases[2].second.push(step - wait[k] - forward[k]);
      }
      r.phases[0].second.push(wait[0]);
      r.phases[1].second.push(forward[0]);
      r.phases[2].second.push(step - wait[0] - forward[0]);
      r.step.push(step);
    }
    return r;
  };
  int found = 0, alarms = 0;
  constexpr int kTrials = 100;
  for (int t = 0; t < kTrials; ++t) {
    const fitscope::RunSeries a = two_ranks(0);
    found += fitscope::compare(a, two_ranks(0.3)).largest_increase() == "rank 1 data_wait";  // 0.3 ms: 5 % of the step
    alarms += fitscope::compare(a, two_ranks(0)).largest_increase().rfind("rank", 0) == 0;
  }
  EXPECT_GE(found, kTrials * 90 / 100) << "a rank's loader delayed by 5 % of the step";
  EXPECT_LE(alarms, kTrials * 10 / 100) << "a rank named in identical runs";
}

// With two ranks, rank 0's part of a phase is minus rank 1's: one comparison seen from either side,
// counted once in the joint confidence; with three, each rank's part is a comparison of its own.
TEST(Comparison, TwoRanksMirrorImagePartsAreOneComparisonInTheJointConfidence) {
  std::mt19937_64 rng(17);
  const fitscope::Comparison two = fitscope::compare(run(rng, 0.2, 0.1, {2.3, 2.3}), run(rng, 0.2, 0.1, {2.3, 2.4}));
  ASSERT_EQ(two.parts.size(), 5u);  // data_wait, forward, comm; rank 0 forward, rank 1 forward
  EXPECT_EQ(two.part_family, 4);
  EXPECT_NEAR(two.part_confidence, 1 - 0.05 / 4, 1e-12);
  const auto part = [](const fitscope::Comparison& c, const std::string& name) {
    for (const fitscope::PartChange& p : c.parts) {
      if (p.part == name) return p.difference;
    }
    ADD_FAILURE() << "no part " << name;
    return fitscope::Difference{};
  };
  const fitscope::Difference r0 = part(two, "rank 0 forward"), r1 = part(two, "rank 1 forward");
  EXPECT_NEAR(r0.change, -r1.change, 1e-12);
  EXPECT_NEAR(r0.low, -r1.high, 1e-12);
  EXPECT_NEAR(r0.high, -r1.low, 1e-12);
  EXPECT_NE(two.to_json().find("\"part_family\": 4"), std::string::npos);
  EXPECT_NE(fitscope::format_comparison(two).find("jointly over 4 comparisons: two ranks' mirror-image parts once"), std::string::npos)
      << fitscope::format_comparison(two);

  const fitscope::Comparison three = fitscope::compare(run(rng, 0.2, 0.1, {2.3, 2.3, 2.3}), run(rng, 0.2, 0.1, {2.3, 2.3, 2.4}));
  ASSERT_EQ(three.parts.size(), 6u);
  EXPECT_EQ(three.part_family, 6);
  EXPECT_NE(fitscope::format_comparison(three).find("jointly over 6 parts"), std::string::npos);
}

TEST(Comparison, RunsOfBothSidesAreComparedByWelchsTOverTheirMeans) {
  const fitscope::Difference d = fitscope::compare_run_means({1, 2, 3}, {4, 5, 6}, 0.95);
  EXPECT_DOUBLE_EQ(d.change, 3);
  const double half = 2.776445 * std::sqrt(1.0 / 3 + 1.0 / 3);  // t(0.975, 4): equal spreads, Welch's df 4
  EXPECT_NEAR(d.low, 3 - half, 1e-5);
  EXPECT_NEAR(d.high, 3 + half, 1e-5);
  EXPECT_TRUE(d.significant);
  // one run on a side: the other side's prediction interval, either way round
  const fitscope::Difference one_b = fitscope::compare_run_means({1, 2, 3}, {5}, 0.95), one_a = fitscope::compare_run_means({5}, {1, 2, 3}, 0.95);
  EXPECT_DOUBLE_EQ(one_a.change, -one_b.change);
  EXPECT_DOUBLE_EQ(one_a.low, -one_b.high);
  EXPECT_DOUBLE_EQ(one_a.a, 5);
  EXPECT_DOUBLE_EQ(one_a.b, 2);
}

// A machine whose speed drifts between runs, by more than a run's steps show, and holds for a few runs:
// three runs of A made well before B call identical B runs changed often; runs of A and B made in turn
// share the drift, and are called changed about as often as the confidence says.
TEST(Comparison, RunsOfAAndBMadeInTurnHoldTheirConfidenceOnADriftingMachine) {
  std::mt19937_64 rng(19);
  std::normal_distribution<double> speed(0, 0.15);
  double machine = 0;
  const auto next_run = [&](double data_wait) {  // the machine's speed moves a little from run to run
    machine = 0.8 * machine + 0.6 * speed(rng);
    fitscope::RunSeries r;
    r.step = SegmentedSeries(200, 10);
    r.phases = {{"data_wait", SegmentedSeries(200, 10)}, {"forward", SegmentedSeries(200, 10)}};
    const std::vector<double> w = steps(rng, 200, data_wait, 0.5), f = steps(rng, 200, 4.0 * std::exp(machine), 0.5);
    for (std::size_t i = 0; i < w.size(); ++i) {
      r.step.push(w[i] + f[i]);
      r.phases[0].second.push(w[i]);
      r.phases[1].second.push(f[i]);
    }
    return r;
  };
  constexpr int kTrials = 200;
  int apart = 0, in_turn = 0, found = 0;
  for (int t = 0; t < kTrials; ++t) {
    std::vector<fitscope::RunSeries> a_early;
    for (int i = 0; i < 3; ++i) a_early.push_back(next_run(0.5));
    for (int i = 0; i < 6; ++i) next_run(0.5);  // runs in between: the machine moves on
    std::vector<fitscope::RunSeries> a, b, slower;
    for (int i = 0; i < 3; ++i) {
      a.push_back(next_run(0.5));
      b.push_back(next_run(0.5));
      slower.push_back(next_run(0.75));  // +0.25 ms, 5 % of the step
    }
    apart += fitscope::compare(a_early, {b[0]}).direction() != "no significant change";
    in_turn += fitscope::compare(a, b).direction() != "no significant change";
    found += fitscope::compare(a, slower).largest_increase() == "data_wait";
  }
  EXPECT_GT(apart, kTrials * 15 / 100) << "three runs of A made apart from B";
  EXPECT_LE(in_turn, kTrials * 8 / 100) << "runs of A and B made in turn";
  EXPECT_GE(found, kTrials * 90 / 100) << "a 5 % slower loader, runs in turn";
  const fitscope::Comparison c = fitscope::compare(std::vector<fitscope::RunSeries>{next_run(0.5), next_run(0.5)},
                                                   std::vector<fitscope::RunSeries>{next_run(0.5), next_run(0.5)});
  EXPECT_EQ(c.runs_of_b(), 2);
  EXPECT_EQ(c.noise_text(), "the spread of A's 2 and B's 2 runs");
  EXPECT_NE(c.to_json().find("\"runs_of_b\": 2"), std::string::npos);
  EXPECT_NE(c.method().find("Welch's t over the runs' means"), std::string::npos);
}
