#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "fitscope/summary/sweep.hpp"
#include "fitscope/summary/trace_writer.hpp"

using namespace fitscope;

TEST(TraceWriter, KeepsTheFirstStepsThenOneInEveryN) {
  const auto path = (std::filesystem::temp_directory_path() / "fitscope_trace_test.json").string();
  TraceWriter writer(path, {3, 2});
  for (int i = 0; i < 10; ++i) {
    StepRecord r;
    r.batch = i;
    r.start_ns = i * 1000;
    r.step_ns = 900;
    r.phase_ns[static_cast<std::size_t>(Phase::forward)] = 500;
    r.phase_ns[static_cast<std::size_t>(Phase::other)] = 400;
    writer.on_step(r);
  }
  writer.finish();
  EXPECT_EQ(writer.kept(), 7u);  // 0, 1, 2, then 3, 5, 7, 9
  std::ifstream in(path);
  const auto trace = nlohmann::json::parse(in);
  std::vector<int64_t> batches;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("name") == "step") batches.push_back(e.at("args").at("batch").get<int64_t>());
  }
  EXPECT_EQ(batches, (std::vector<int64_t>{0, 1, 2, 3, 5, 7, 9}));
  std::filesystem::remove(path);
}

TEST(TraceWriter, LeavesOutPhasesThatTookNoTimeAndShowsValidationAsItsOwnSpan) {
  const auto path = (std::filesystem::temp_directory_path() / "fitscope_trace_validation_test.json").string();
  TraceWriter writer(path);
  StepRecord r;
  r.start_ns = 1'000'000;
  r.step_ns = 900'000;
  r.phase_ns[static_cast<std::size_t>(Phase::forward)] = 500'000;
  r.phase_ns[static_cast<std::size_t>(Phase::other)] = 400'000;
  writer.on_step(r);
  writer.on_validation(0, 2'000'000, 3'000'000);
  writer.finish();
  std::ifstream in(path);
  const auto trace = nlohmann::json::parse(in);
  std::vector<std::string> names;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") != "X") continue;
    EXPECT_GT(e.at("dur").get<double>(), 0) << e.dump();
    names.push_back(e.at("name").get<std::string>());
    if (e.at("name") == "validation") {
      EXPECT_EQ(e.at("ts").get<double>(), 1000.0);  // microseconds after the first event
      EXPECT_EQ(e.at("dur").get<double>(), 3000.0);
      EXPECT_EQ(e.at("args").at("epoch").get<int64_t>(), 0);
      EXPECT_EQ(e.at("tid").get<int64_t>(), 1);
    }
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"forward", "other", "step", "validation"}));
  std::filesystem::remove(path);
}

namespace {
SweepRow row(int64_t batch, double samples_per_s, double step_ms) {
  SweepRow r;
  r.batch_size = batch;
  r.samples_per_s = samples_per_s;
  r.step_ms_mean = step_ms;
  r.step_ms_p50 = step_ms;
  return r;
}
/// A row measured in windows (samples/s per round); its median is the middle one.
SweepRow windowed(int64_t batch, std::vector<double> windows) {
  SweepRow r = row(batch, 0, 0);
  r.set_windows(std::move(windows));
  return r;
}
}  // namespace

TEST(Sweep, FitsFixedAndPerExampleCostByLeastSquares) {
  // step = 2 ms + 0.01 ms per example, exactly
  const std::vector<SweepRow> rows = {row(16, 0, 2.16), row(32, 0, 2.32), row(64, 0, 2.64), row(128, 0, 3.28)};
  const auto fit = fit_step_time(rows);
  ASSERT_TRUE(fit.has_value());
  EXPECT_NEAR(fit->fixed_ms, 2.0, 1e-9);
  EXPECT_NEAR(fit->per_sample_ms, 0.01, 1e-12);
  EXPECT_FALSE(fit_step_time({row(32, 1, 1), row(32, 1, 2)}).has_value());
}

TEST(Sweep, TheFitIsOfTheMediansAndNeverNegative) {
  // a falling step time (noise) would give a negative per-example cost, a steep one a negative fixed
  // cost ("about -0.298 ms fixed"): each comes out 0 instead, the other fitted alone
  const auto falling = fit_step_time({row(16, 0, 1.0), row(32, 0, 0.9), row(64, 0, 0.8)});
  ASSERT_TRUE(falling.has_value());
  EXPECT_EQ(falling->per_sample_ms, 0);
  EXPECT_NEAR(falling->fixed_ms, 0.9, 1e-12);
  const auto steep = fit_step_time({row(16, 0, 0.1), row(64, 0, 1.0), row(256, 0, 5.0)});
  ASSERT_TRUE(steep.has_value());
  EXPECT_EQ(steep->fixed_ms, 0);
  EXPECT_GT(steep->per_sample_ms, 0);
  // the medians, not the means, are fitted
  SweepRow a = row(16, 0, 1.0), b = row(32, 0, 2.0);
  a.step_ms_mean = 50;
  const auto medians = fit_step_time({a, b});
  EXPECT_NEAR(medians->per_sample_ms, 1.0 / 16, 1e-12);
  EXPECT_NEAR(medians->fixed_ms, 0, 1e-12);
}

TEST(Sweep, TheKneeIsTheSmallestBatchWithinNinetyPercentOfTheBest) {
  const std::vector<SweepRow> rows = {row(16, 4000, 0), row(32, 7000, 0), row(64, 9200, 0), row(128, 10000, 0),
                                      row(256, 9900, 0)};
  const Knee knee = find_knee(rows);
  EXPECT_EQ(knee.batch_size, 64);
  EXPECT_TRUE(knee.resolved);  // one window each: nothing to tell apart
  const auto json = nlohmann::json::parse(sweep_json(rows, "mlp", {5, 0.25, 20}));
  EXPECT_EQ(json.at("knee_batch_size").get<int64_t>(), 64);
  EXPECT_TRUE(json.at("knee").at("resolved").get<bool>());
  EXPECT_EQ(json.at("method").at("windows").get<int64_t>(), 5);
  EXPECT_EQ(json.at("rows").size(), 5u);
  EXPECT_THROW(find_knee({}), std::invalid_argument);
}

TEST(Sweep, AKneeIsResolvedOnlyWhenEveryRoundPutsItOnTheSameSideOfNinetyPercent) {
  // the machine slows down in rounds 3 and 4: every batch size alike
  const SweepRow best = windowed(128, {10000, 10200, 8000, 8200, 9900});
  // 64 reaches 90 % of 128 in every round although its slow rounds read under 90 % of 128's fast ones
  const SweepRow reaches = windowed(64, {9200, 9300, 7300, 7500, 9000});
  // 32 stays under 90 % in every round
  const SweepRow below = windowed(32, {8500, 8600, 7000, 7100, 8700});
  const Knee clear = find_knee({windowed(16, {4000, 4100, 3300, 3300, 4000}), below, reaches, best});
  EXPECT_EQ(clear.batch_size, 64);
  EXPECT_TRUE(clear.resolved);
  EXPECT_EQ(clear.lowest, 64);
  EXPECT_EQ(clear.highest, 64);
  // 32 reaches 90 % in rounds 3 and 4 only: the knee is 32 or 64, 64 by the medians
  const SweepRow straddles = windowed(32, {8500, 8600, 7300, 7500, 8700});
  const std::vector<SweepRow> unclear_rows = {straddles, reaches, best};
  const Knee unclear = find_knee(unclear_rows);
  EXPECT_EQ(unclear.batch_size, 64);
  EXPECT_FALSE(unclear.resolved);
  EXPECT_EQ(unclear.lowest, 32);
  EXPECT_EQ(unclear.highest, 64);
  EXPECT_NE(describe_knee(unclear).find("Knee not resolved: between batch sizes 32 and 64"), std::string::npos)
      << describe_knee(unclear);
  const auto json = nlohmann::json::parse(sweep_json(unclear_rows, "mlp", {5, 0.25, 20}));
  EXPECT_FALSE(json.at("knee").at("resolved").get<bool>());
  EXPECT_EQ(json.at("knee").at("lowest").get<int64_t>(), 32);
  EXPECT_EQ(json.at("knee").at("highest").get<int64_t>(), 64);
  EXPECT_EQ(json.at("rows").at(1).at("windows").size(), 5u);
  EXPECT_NE(format_sweep(unclear_rows).find("Knee not resolved"), std::string::npos);
}

TEST(Sweep, ARowWhoseWindowsDifferByMoreThanAFifthIsFlaggedWide) {
  // seed 003's noise: batch 128 read 62 k and 296 k samples/s in two sweeps
  const std::vector<SweepRow> rows = {windowed(64, {95000, 100000, 104000}), windowed(128, {62000, 180000, 296000})};
  EXPECT_NEAR(rows[0].spread(), 0.09, 1e-12);
  const auto json = nlohmann::json::parse(sweep_json(rows, "mlp", {3, 0.25, 20}));
  EXPECT_FALSE(json.at("rows").at(0).at("wide").get<bool>());
  EXPECT_TRUE(json.at("rows").at(1).at("wide").get<bool>());
  EXPECT_EQ(json.at("rows").at(1).at("samples_per_s_low").get<double>(), 62000);
  const std::string table = format_sweep(rows);
  EXPECT_NE(table.find("62000-296000 wide"), std::string::npos) << table;
  EXPECT_EQ(table.find("95000-104000 wide"), std::string::npos) << table;
  EXPECT_NE(sweep_csv(rows).find("128,180000.000,62000.000,296000.000,3,"), std::string::npos) << sweep_csv(rows);
}

/// The memory curve is a line through the counted rows; the budget takes the fastest row within it, a
/// row out of memory never (and the step-time fit leaves it out).
TEST(Sweep, AMemoryBudgetTakesTheFastestBatchWithinItAndTheCurvePredictsTheLargest) {
  std::vector<SweepRow> rows = {row(16, 100, 1), row(32, 150, 1), row(64, 180, 1), row(128, 190, 1), row(512, 0, 0)};
  for (SweepRow& r : rows) r.memory_mb = 2 + 0.5 * static_cast<double>(r.batch_size);
  rows.back().out_of_memory = true;
  rows.back().failure = "DefaultCPUAllocator: not enough memory";
  const auto curve = fit_memory(rows);
  ASSERT_TRUE(curve);
  EXPECT_NEAR(curve->fixed_mb, 2, 1e-9);
  EXPECT_NEAR(curve->per_sample_mb, 0.5, 1e-12);
  const MemoryBudgetChoice choice = choose_within_budget(rows, 40);
  EXPECT_EQ(choice.predicted, 76);  // (40 - 2) / 0.5
  EXPECT_EQ(choice.chosen, 64);     // 34 MB; 128 needs 66
  EXPECT_NE(choice.text.find("the fastest within it: batch 64, 180 samples/s, 34.0 MB"), std::string::npos) << choice.text;
  EXPECT_EQ(choose_within_budget(rows, 5).chosen, 0);
  EXPECT_NE(choose_within_budget(rows, 5).text.find("no batch size measured fits it"), std::string::npos);
  EXPECT_TRUE(fit_step_time(rows).has_value());  // the row out of memory has no step time to fit
  EXPECT_NE(format_sweep(rows).find("       512  out of memory: DefaultCPUAllocator: not enough memory"), std::string::npos)
      << format_sweep(rows);
}
