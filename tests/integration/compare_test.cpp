// `fitscope compare` on real run directories: a slowdown planted in one part of run B is found and
// named, a run against itself is no change, --fail-above fails CI, runs of different models are refused.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "process.hpp"

using fitscope::testing::expect_usage_error;
using fitscope::testing::ProcessResult;
using fitscope::testing::read_file;
using fitscope::testing::run_fitscope;
using fitscope::testing::TempDir;

namespace {

namespace compare_test {

// a short run of the seed MLP with its batches built on the training thread, so that a load delay
// is the step's data_wait; `extra` flags make run B's slowdown
void train_into(const std::string& dir, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"train", "--model", "mlp", "--synthetic-size", "2000", "--epochs", "1", "--threads", "1",
                                   "--workers", "0", "--run-dir", dir, "--verbose", "0"};
  args.insert(args.end(), extra.begin(), extra.end());
  const ProcessResult r = run_fitscope(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

}  // namespace compare_test

}  // namespace

TEST(CompareCommand, NamesTheDelayedLoaderWithItsIntervalAndTheSettingThatDiffers) {
  TempDir tmp;
  const std::string a = tmp.path() + "/a", b = tmp.path() + "/b";
  compare_test::train_into(a);
  compare_test::train_into(b, {"--load-delay-ms", "2"});
  const std::string json = tmp.path() + "/compare.json", html = tmp.path() + "/compare.html";
  const ProcessResult r = run_fitscope({"compare", a, b, "--json", json, "--html", html});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("B is slower by "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Attributed to data_wait: +"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  load-delay-ms: 0 -> 2 (config.toml)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("run-dir"), std::string::npos) << "where a run wrote is not a setting that differs";
  const nlohmann::json j = nlohmann::json::parse(read_file(json));
  EXPECT_EQ(j.at("direction"), "slower");
  EXPECT_EQ(j.at("attributed_to"), "data_wait");
  EXPECT_TRUE(j.at("step").at("significant").get<bool>());
  EXPECT_GT(j.at("step").at("low_ms").get<double>(), 0);
  EXPECT_EQ(j.at("a").at("directory"), a);
  const std::string page = read_file(html);
  EXPECT_NE(page.find("B is slower"), std::string::npos);
  EXPECT_NE(page.find("attributed to data_wait"), std::string::npos);
  EXPECT_NE(page.find("<svg class=\"chart intervals\""), std::string::npos);
  EXPECT_EQ(page.find("<script"), std::string::npos);

  // for CI: B is slower by far more than 5 %, at the interval's low end too
  const ProcessResult gate = run_fitscope({"compare", a, b, "--fail-above", "5"});
  EXPECT_EQ(gate.exit_code, 1) << gate.err;
  EXPECT_NE(gate.err.find("fitscope compare: B is slower than A by more than 5% (--fail-above): "), std::string::npos) << gate.err;
  // the other way round B is faster: the gate passes
  const ProcessResult faster = run_fitscope({"compare", b, a, "--fail-above", "5"});
  EXPECT_EQ(faster.exit_code, 0) << faster.err;
  EXPECT_NE(faster.out.find("B is faster by "), std::string::npos) << faster.out;

  // a run against itself: no significant change, nothing attributed, no setting differs
  const ProcessResult same = run_fitscope({"compare", a, a, "--fail-above", "0"});
  EXPECT_EQ(same.exit_code, 0) << same.err;
  EXPECT_NE(same.out.find("no significant change (+0.0%"), std::string::npos) << same.out;
  EXPECT_EQ(same.out.find("Attributed to"), std::string::npos) << same.out;
  EXPECT_NE(same.out.find("Settings: the same in both runs."), std::string::npos) << same.out;

  // a run of another model is refused, naming both, unless --force
  const std::string other = tmp.path() + "/other";
  std::filesystem::copy(a, other, std::filesystem::copy_options::recursive);
  nlohmann::json summary = nlohmann::json::parse(read_file(other + "/summary.json"));
  summary["model"] = "cnn";
  std::ofstream(other + "/summary.json", std::ios::trunc) << summary.dump(2);
  expect_usage_error({"compare", a, other}, "the runs trained different models: " + a + " mlp, " + other + " cnn");
  expect_usage_error({"compare", a, other}, "--force compares them all the same");
  EXPECT_EQ(run_fitscope({"compare", a, other, "--force"}).exit_code, 0);

  // not a run directory; a bad flag value
  expect_usage_error({"compare", a, tmp.path() + "/none"}, tmp.path() + "/none/summary.json");
  expect_usage_error({"compare", a, b, "--fail-above", "-1"}, "--fail-above: expected a percentage in [0, 1000], got '-1'");
  expect_usage_error({"compare", a}, "1 run directory (expected RUN_A [RUN_A ...] RUN_B [RUN_B ...]: at least one run of each");
}

// Several runs of A's settings: B is judged against their measured spread, part by part; runs of A that
// differ in a setting are not repeats and are refused.
TEST(CompareCommand, AgainstThreeRunsOfASettingJudgesBByTheirSpread) {
  TempDir tmp;
  const std::string a1 = tmp.path() + "/a1", a2 = tmp.path() + "/a2", a3 = tmp.path() + "/a3", b = tmp.path() + "/b";
  for (const std::string& a : {a1, a2, a3}) compare_test::train_into(a);
  compare_test::train_into(b, {"--load-delay-ms", "2"});
  const std::string json = tmp.path() + "/compare.json";
  const ProcessResult r = run_fitscope({"compare", a1, a2, a3, b, "--json", json});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Attributed to data_wait: +"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("A is 3 runs of the same settings"), std::string::npos) << r.out;
  const nlohmann::json j = nlohmann::json::parse(read_file(json));
  EXPECT_EQ(j.at("method").at("runs_of_a"), 3);
  EXPECT_EQ(j.at("method").at("noise_floor_ms"), 0.0);
  ASSERT_EQ(j.at("repeats_of_a").size(), 2u);
  EXPECT_EQ(j.at("repeats_of_a")[1].at("directory"), a3);
  // the third run of A against the first two: its loader is not the 2 ms slower one
  ASSERT_EQ(run_fitscope({"compare", a1, a2, a3, "--json", json}).exit_code, 0);
  const nlohmann::json same = nlohmann::json::parse(read_file(json));
  EXPECT_NE(same.at("attributed_to"), "data_wait") << same.dump();
  for (const auto& part : same.at("parts")) {
    if (part.at("part") == "data_wait") EXPECT_LT(part.at("change_ms").get<double>(), 1.0) << part.dump();
  }
  expect_usage_error({"compare", a1, b, a2}, "the runs of A are not repeats of one setting: load-delay-ms is 0 in " + a1 + ", 2 in " + b);

  // three runs of each (two would give Welch's t a single degree of freedom): Welch's t over the runs' means
  const std::string b2 = tmp.path() + "/b2", b3 = tmp.path() + "/b3";
  for (const std::string& more : {b2, b3}) compare_test::train_into(more, {"--load-delay-ms", "2"});
  const ProcessResult both = run_fitscope({"compare", a1, a2, a3, b, b2, b3, "--runs-of-a", "3", "--json", json});
  ASSERT_EQ(both.exit_code, 0) << both.err;
  EXPECT_NE(both.out.find("Attributed to data_wait: +"), std::string::npos) << both.out;
  const nlohmann::json j2 = nlohmann::json::parse(read_file(json));
  EXPECT_EQ(j2.at("method").at("runs_of_b"), 3);
  EXPECT_EQ(j2.at("repeats_of_b")[0].at("directory"), b2);
  expect_usage_error({"compare", a1, a2, b, a3, "--runs-of-a", "2"},
                     "the runs of B are not repeats of one setting: load-delay-ms is 2 in " + b + ", 0 in " + a3);
  expect_usage_error({"compare", a1, a2, "--runs-of-a", "2"}, "2 run directories with --runs-of-a 2 (expected RUN_A [RUN_A ...] RUN_B");
}

// A run made beside two processes that spin on the machine's cores met other load: its verdict says so
// (summary.json verdict.machine) and the comparison names it, with its side, in the printout and the JSON.
TEST(CompareCommand, NamesARunMadeBesideBusyProcessesAsHavingMetOtherLoad) {
  TempDir tmp;
  const std::string a = tmp.path() + "/a", b = tmp.path() + "/b";
  compare_test::train_into(a);
  std::vector<pid_t> spinners;
  for (int i = 0; i < 2; ++i) {
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      for (volatile std::uint64_t spin = 0;; spin = spin + 1) {
      }
    }
    spinners.push_back(child);
  }
  compare_test::train_into(b);
  for (pid_t child : spinners) {
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
  }
  const std::string json = tmp.path() + "/compare.json";
  const ProcessResult r = run_fitscope({"compare", a, b, "--json", json});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Met other load: " + b + " (B): other processes kept "), std::string::npos) << r.out;
  const nlohmann::json j = nlohmann::json::parse(read_file(json));
  EXPECT_EQ(j.at("b").at("machine").get<std::string>().rfind("other processes kept ", 0), 0u) << j.at("b").dump();
}
