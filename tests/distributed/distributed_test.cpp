// Data-parallel runs of real processes on loopback Gloo, started by `fitscope launch`.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <filesystem>
#include <fstream>
#include <functional>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "../integration/process.hpp"

namespace fitscope::testing {
namespace {

using Clock = std::chrono::steady_clock;

#ifdef FITSCOPE_NO_GLOO
/// A CUDA build whose libtorch came without gloo's headers has no Gloo context: every test here is
/// reported skipped, with the reason.
class NoGloo : public ::testing::Environment {
 public:
  void SetUp() override { GTEST_SKIP() << "skipped: this build has no Gloo context (no gloo headers beside libtorch)"; }
};
::testing::Environment* const no_gloo = ::testing::AddGlobalTestEnvironment(new NoGloo);
#endif

/// A port nobody listens on now.
std::string free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t n = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n);
  ::close(fd);
  return std::to_string(ntohs(a.sin_port));
}

/// `fitscope launch` of `ranks` ranks on a free port, with `flags` (e.g. --max-restarts) before the command.
std::vector<std::string> launch(int ranks, const std::vector<std::string>& command, std::vector<std::string> flags = {}) {
  std::vector<std::string> args = {FITSCOPE_CLI, "launch", "--nproc-per-node", std::to_string(ranks), "--master-port", free_port()};
  args.insert(args.end(), flags.begin(), flags.end());
  args.push_back("--");
  args.insert(args.end(), command.begin(), command.end());
  return args;
}

/// The command of two ranks training the seed MLP for 10 epochs with a backup every 20 steps into
/// `run_dir`.
std::vector<std::string> backed_up_mlp_command(const std::string& run_dir, const std::string& dist_timeout,
                                               std::vector<std::string> extra) {
  std::vector<std::string> cmd = {FITSCOPE_CLI, "train", "--model", "mlp", "--epochs", "10", "--synthetic-size", "3200",
                                  "--workers", "0", "--verbose", "2", "--checkpoint-every", "20", "--seed", "4",
                                  "--dist-timeout", dist_timeout, "--run-dir", run_dir};
  cmd.insert(cmd.end(), extra.begin(), extra.end());
  return cmd;
}

std::vector<std::string> backed_up_mlp(const std::string& run_dir, const std::string& dist_timeout,
                                       std::vector<std::string> extra, std::vector<std::string> flags = {}) {
  return launch(2, backed_up_mlp_command(run_dir, dist_timeout, std::move(extra)), std::move(flags));
}

std::vector<float> parameters(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<float> values;
  float v;
  while (in.read(reinterpret_cast<char*>(&v), sizeof v)) values.push_back(v);
  return values;
}

/// The largest element-wise difference of two parameter lists of the same size.
double largest_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double largest = 0;
  for (std::size_t i = 0; i < a.size(); ++i) largest = std::max(largest, static_cast<double>(std::abs(a[i] - b[i])));
  return largest;
}

TEST(Distributed, TwoRanksFinishWithIdenticalWeightsAndEpochMetricsOverTheUnionOfShards) {
  TempDir dir;
  const ProcessResult r = run_process(launch(2, {DIST_WORKER, "train", dir.path()}));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto w0 = parameters(dir.path() + "/rank0.bin"), w1 = parameters(dir.path() + "/rank1.bin");
  ASSERT_FALSE(w0.empty());
  EXPECT_EQ(w0, w1);  // bit for bit: the same averaged gradients everywhere
  const auto result = nlohmann::json::parse(read_file(dir.path() + "/result.json"));
  EXPECT_EQ(result["world_size"], 2);
  // 600 training examples: 300 per rank; 101 validation examples: 51 and 50, each counted once
  EXPECT_DOUBLE_EQ(result["accuracy"].get<double>(), result["whole_train_accuracy"].get<double>());
  EXPECT_DOUBLE_EQ(result["val_accuracy"].get<double>(), result["whole_validation_accuracy"].get<double>());
  // a user metric's state is summed across ranks like the built-ins'
  EXPECT_NEAR(result["val_mean_top_logit"].get<double>(), result["whole_validation_mean_top_logit"].get<double>(), 1e-6);
}

TEST(Distributed, OneStepOfTwoRanksTimesBatchBEqualsOneRankTimesBatchTwoB) {
  TempDir two, one;
  const ProcessResult a = run_process(launch(2, {DIST_WORKER, "step", two.path(), "16"}));
  ASSERT_EQ(a.exit_code, 0) << a.out << a.err;
  const ProcessResult b = run_process({DIST_WORKER, "step", one.path(), "32"});
  ASSERT_EQ(b.exit_code, 0) << b.out << b.err;
  const auto w2 = parameters(two.path() + "/rank0.bin"), w1 = parameters(one.path() + "/rank0.bin");
  ASSERT_EQ(w2.size(), w1.size());
  EXPECT_LT(largest_difference(w2, w1), 1e-5);
  const double moved = largest_difference(w2, parameters(two.path() + "/rank1.bin"));
  EXPECT_EQ(moved, 0);
}

TEST(Distributed, TheChiefWritesEveryRanksTimingsIntoTheRunDirectory) {
  TempDir dir;
  const std::string run = dir.path() + "/run";
  const ProcessResult r = run_process(launch(2, {FITSCOPE_CLI, "train", "--model", "mlp", "--epochs", "2", "--synthetic-size",
                                                 "1000", "--verbose", "2", "--run-dir", run, "--dist-timeout", "20"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("[rank 1] rank 1 of 2 finished"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[rank 0] Ranks (step p50 / p99"), std::string::npos) << r.out;
  const auto summary = nlohmann::json::parse(read_file(run + "/summary.json"));
  EXPECT_EQ(summary["world_size"], 2);
  // throughput labelled: per rank and the job's, the ranks stepping together
  EXPECT_DOUBLE_EQ(summary["job_samples_per_s"].get<double>(), 2 * summary["samples_per_s"].get<double>());
  EXPECT_NE(r.out.find(" samples/s per rank, " + std::to_string(std::lround(summary["job_samples_per_s"].get<double>())) +
                       " for the job of 2 ranks\n"),
            std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("measured in warm-up:\n"), std::string::npos) << r.out;  // a threads line that ends
  if (std::thread::hardware_concurrency() <= 2) {  // 2 ranks on this machine's 2 cores: one each, no gain
    EXPECT_NE(summary["verdict"]["contention"].get<std::string>().find("2 ranks share this machine's"), std::string::npos)
        << summary["verdict"].dump();
  }
  ASSERT_EQ(summary["ranks"].size(), 2u);
  EXPECT_EQ(summary["ranks"][1]["rank"], 1);
  EXPECT_GT(summary["ranks"][1]["step_ms_p50"].get<double>(), 0);
  EXPECT_TRUE(summary["stragglers"].is_array());
  EXPECT_GE(summary["phases_across_ranks"]["comm"]["max_ms"].get<double>(),
            summary["phases_across_ranks"]["comm"]["mean_ms"].get<double>());
  EXPECT_GT(summary["communication"]["total_ms_mean"].get<double>(), 0);
  int64_t bucket_bytes = 0;  // the buckets hold every gradient of the MLP (784 x 10 weights, 10 biases)
  for (const auto& b : summary["communication"]["bucket_bytes"]) bucket_bytes += b.get<int64_t>();
  EXPECT_EQ(bucket_bytes, (784 * 10 + 10) * 4);
  EXPECT_NE(r.out.find("[rank 0]   gradient buckets, in launch order:"), std::string::npos) << r.out;
  // 800 training examples: 400 per rank, 13 steps a rank and epoch; both ranks' rows are in steps.csv
  const std::string steps = read_file(run + "/steps.csv");
  std::size_t rank1_rows = 0;
  for (std::size_t line = steps.find('\n'); line != std::string::npos && line + 1 < steps.size(); line = steps.find('\n', line + 1)) {
    const std::size_t a = steps.find(',', line + 1), b = steps.find(',', a + 1);
    if (steps.compare(b + 1, 2, "1,") == 0) ++rank1_rows;
  }
  EXPECT_EQ(rank1_rows, 26u);
  const auto trace = nlohmann::json::parse(read_file(run + "/trace.json"));
  bool rank1_track = false;
  for (const auto& e : trace["traceEvents"]) rank1_track = rank1_track || (e["name"] == "step" && e["pid"] == 1);
  EXPECT_TRUE(rank1_track);
}

// `fitscope compare` of two two-rank runs, rank 1's loader 3 ms slower in B: the part named is that
// rank's data_wait against the other rank's, not the chief's comm where it waited for it.
TEST(Distributed, CompareNamesTheRankWhoseLoaderWasSlowerByItsPhase) {
  TempDir dir;
  const auto run_two = [&](const std::string& run, const std::string& delay) {
    const std::vector<std::string> train = {FITSCOPE_CLI, "train", "--model", "mlp", "--epochs", "2", "--synthetic-size", "2000",
                                            "--workers", "0", "--threads", "1", "--verbose", "0", "--run-dir", run, "--dist-timeout", "20"};
    std::vector<std::string> command = {"/bin/sh", "-c", "extra=''; [ \"$RANK\" = 1 ] && extra=\"--load-delay-ms $0\"; exec \"$@\" $extra",
                                        delay};
    command.insert(command.end(), train.begin(), train.end());
    const ProcessResult r = run_process(launch(2, command));
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  };
  const std::string a = dir.path() + "/a", b = dir.path() + "/b", json = dir.path() + "/compare.json";
  run_two(a, "0");
  run_two(b, "3");
  const ProcessResult r = run_process({FITSCOPE_CLI, "compare", a, b, "--json", json});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto c = nlohmann::json::parse(read_file(json));
  EXPECT_EQ(c["largest_increase"], "rank 1 data_wait") << r.out;
  EXPECT_NE(r.out.find("rank 1 data_wait"), std::string::npos) << r.out;
  bool rank_part = false;
  for (const auto& p : c["parts"]) rank_part = rank_part || (p["part"] == "rank 1 data_wait" && p["kind"] == "rank");
  EXPECT_TRUE(rank_part) << c["parts"].dump();
}

TEST(Distributed, ARankWhoseBackwardIsSlowerIsNamedWithItsBackwardNotCalledCommunication) {
  // rank 1's backward sleeps 15 ms a step: the all-reduce evens out the ranks' steps, rank 0 waits in comm
  TempDir dir;
  const std::string run = dir.path() + "/run";
  const ProcessResult r = run_process(launch(2, {DIST_WORKER, "straggle", run, "15"}));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto summary = nlohmann::json::parse(read_file(run + "/summary.json"));
  const auto& verdict = summary["verdict"];
  EXPECT_EQ(verdict["bound"], "straggler") << verdict.dump();
  const std::string advice = verdict["advice"].get<std::string>();
  EXPECT_NE(advice.find("the other ranks wait for rank 1 "), std::string::npos) << advice;
  EXPECT_NE(advice.find("rank 1 straggles in most steps: its backward takes "), std::string::npos) << advice;
  EXPECT_EQ(summary["ranks"][1]["straggles"], "most steps");
  EXPECT_EQ(summary["ranks"][1]["straggle_phase"], "backward");
  EXPECT_EQ(summary["ranks"][0]["straggles"], "");
  EXPECT_EQ(summary["stragglers"], nlohmann::json::array({1}));
  EXPECT_NE(r.out.find("slow: backward"), std::string::npos) << r.out;
}

/// The example indices a rank of `dist_worker elastic` trained on, in order.
std::vector<int64_t> trained(const std::string& records, int world, int rank) {
  std::ifstream in(records + "/w" + std::to_string(world) + "-r" + std::to_string(rank) + ".txt");
  std::vector<int64_t> out;
  for (int64_t i; in >> i;) out.push_back(i);
  return out;
}

/// Every example of each epoch trained on once (but for the pads of an uneven split): `before` holds
/// what the ranks trained on up to the backup the last ranks resumed from, `last` each last rank's
/// examples in order (the rest of the interrupted epoch, then a whole one of `per_rank`).
void expect_each_example_once_an_epoch(std::vector<int64_t> before, const std::vector<std::vector<int64_t>>& last, int64_t per_rank) {
  const int64_t world = static_cast<int64_t>(last.size());
  const int64_t left = 960 - static_cast<int64_t>(before.size()), share = (left + world - 1) / world;
  std::vector<int64_t> second;
  for (std::size_t rank = 0; rank < last.size(); ++rank) {
    ASSERT_EQ(static_cast<int64_t>(last[rank].size()), share + per_rank) << "rank " << rank << " of " << world;
    before.insert(before.end(), last[rank].begin(), last[rank].begin() + share);
    second.insert(second.end(), last[rank].begin() + share, last[rank].end());
  }
  std::vector<int64_t> all(960);
  std::iota(all.begin(), all.end(), int64_t{0});
  std::sort(second.begin(), second.end());
  EXPECT_EQ(second, all);
  std::sort(before.begin(), before.end());
  EXPECT_EQ(static_cast<int64_t>(before.size()), 960 + world * share - left);  // the pads, seen twice
  before.erase(std::unique(before.begin(), before.end()), before.end());
  EXPECT_EQ(before, all);
}

/// The global step of the newest backup in `run`/backup.
int64_t newest_backup_step(const std::string& run) {
  int64_t newest = -1;
  for (const auto& f : std::filesystem::directory_iterator(run + "/backup")) {
    const std::string name = f.path().filename().string();  // ckpt-000000000012.fitscope
    if (name.rfind("ckpt-", 0) == 0) newest = std::max<int64_t>(newest, std::stoll(name.substr(5, 12)));
  }
  return newest;
}

/// Runs `dist_worker elastic` on `data` as a job that loses hosts and gains them: on the ranks of each
/// of `stops` in turn, interrupted after that many steps of its own, each resuming from the newest
/// backup, then on `last` ranks to the end. The steps after a backup are lost with the interruption,
/// as a lost host's are; counting each rank's examples up to the backup the next ranks resumed from,
/// every example is trained on once in each epoch (the interrupted epoch split among the ranks by the
/// examples done), but for the pads of an uneven split.
void expect_an_elastic_job_to_train_each_example_once_an_epoch(const std::string& data, const std::vector<std::pair<int, int>>& stops,
                                                               int last) {
  TempDir dir;
  const std::string run = dir.path() + "/run", records = dir.path() + "/records";
  std::filesystem::create_directories(records);
  std::vector<int64_t> first_epoch;
  int64_t backup = 0;  // the step the ranks start from
  std::map<std::pair<int, int>, int64_t> earlier;  // (world, rank): the examples its file held before
  for (const auto& [world, stop] : stops) {
    const ProcessResult r = run_process(launch(world, {DIST_WORKER, "elastic", run, records, std::to_string(stop), "0", data}));
    ASSERT_EQ(r.exit_code, 0) << world << " ranks:\n" << r.out << r.err;
    const int64_t next = newest_backup_step(run);
    ASSERT_GE(next, backup + stop) << world << " ranks";
    for (int rank = 0; rank < world; ++rank) {  // a rank's file holds its earlier runs' examples first
      const auto mine = trained(records, world, rank);
      int64_t& from = earlier[{world, rank}];
      ASSERT_GE(static_cast<int64_t>(mine.size()), from + (next - backup) * 8) << "rank " << rank << " of " << world;
      first_epoch.insert(first_epoch.end(), mine.begin() + from, mine.begin() + from + (next - backup) * 8);
      from = static_cast<int64_t>(mine.size());
    }
    backup = next;
  }
  const ProcessResult end = run_process(launch(last, {DIST_WORKER, "elastic", run, records, "0", "0", data}));
  ASSERT_EQ(end.exit_code, 0) << end.out << end.err;
  std::vector<std::vector<int64_t>> ranks;
  for (int rank = 0; rank < last; ++rank) {  // the same number of ranks may have run before
    const auto mine = trained(records, last, rank);
    ranks.emplace_back(mine.begin() + earlier[{last, rank}], mine.end());
  }
  expect_each_example_once_an_epoch(first_epoch, ranks, 960 / last);
  const auto summary = nlohmann::json::parse(read_file(run + "/summary.json"));
  EXPECT_EQ(summary["world_size"], last);
  EXPECT_FALSE(summary["interrupted"].get<bool>());
}

/// 4 ranks train two epochs of 960 examples in batches of 8, interrupted after 12 steps; 2 ranks resume
/// and are interrupted after 8 steps, twice (the second resumes a pass the first split anew); 3 ranks
/// resume and finish.
TEST(Distributed, ABackupOfFourRanksResumesOnTwoAndThenOnThreeTrainingEachExampleOnceAnEpoch) {
  expect_an_elastic_job_to_train_each_example_once_an_epoch("memory", {{4, 12}, {2, 8}, {2, 8}}, 3);
}

/// The same with an image folder: 960 PNGs whose first two pixels number them.
TEST(Distributed, AnImageFolderResumedOnTwoRanksThenOnThreeTrainsEachImageOnceAnEpoch) {
  TempDir images;
  ASSERT_EQ(run_process({DIST_WORKER, "elastic-data", "folder", images.path()}).exit_code, 0);
  expect_an_elastic_job_to_train_each_example_once_an_epoch("folder:" + images.path(), {{4, 12}, {2, 8}}, 3);
}

/// The same with a stream of 8 TFRecord shards, each rank reading its own and shuffling them in a
/// buffer: the pass 4 ranks began is ordered by their draws, and the 2 ranks after them, and the 4
/// after those, read what it has left wherever it lies (4 -> 2 after hosts are lost, 2 -> 4 when they
/// come back).
TEST(Distributed, AStreamResumedOnTwoRanksThenOnFourTrainsEachRecordOnceAnEpoch) {
  TempDir shards;
  ASSERT_EQ(run_process({DIST_WORKER, "elastic-data", "tfrecord", shards.path()}).exit_code, 0);
  expect_an_elastic_job_to_train_each_example_once_an_epoch("tfrecord:" + shards.path() + "/*.tfrecord", {{4, 12}, {2, 8}, {2, 8}}, 4);
}

/// Two ranks accumulating two batches of 8 each make the update of one rank's batch of 32, and sum the
/// gradients once, as a two-rank step of 16 does: the first batch's backward stays local (no_sync).
TEST(Distributed, AccumulatingRanksUpdateAsOneLargeBatchAndSumTheGradientsOnce) {
  TempDir accumulated, plain, one;
  const ProcessResult a = run_process(launch(2, {DIST_WORKER, "step", accumulated.path(), "8", "2"}));
  ASSERT_EQ(a.exit_code, 0) << a.out << a.err;
  const ProcessResult p = run_process(launch(2, {DIST_WORKER, "step", plain.path(), "16"}));
  ASSERT_EQ(p.exit_code, 0) << p.out << p.err;
  const ProcessResult b = run_process({DIST_WORKER, "step", one.path(), "32"});
  ASSERT_EQ(b.exit_code, 0) << b.out << b.err;
  // each rank's shard of the in-order examples: rank r reads examples r, r + 2, ...; 2 x 2 x 8 = 32
  const auto w = parameters(accumulated.path() + "/rank0.bin"), w1 = parameters(one.path() + "/rank0.bin");
  ASSERT_EQ(w.size(), w1.size());
  EXPECT_LT(largest_difference(w, w1), 1e-5);
  EXPECT_EQ(w, parameters(accumulated.path() + "/rank1.bin"));
  const std::string sums = read_file(accumulated.path() + "/rank0.sums");
  EXPECT_EQ(sums, read_file(plain.path() + "/rank0.sums"));
  EXPECT_GT(std::stoll(sums), 0);
  EXPECT_EQ(sums, read_file(accumulated.path() + "/rank1.sums"));
}

TEST(Distributed, TwoRanksOverFourShardsEachReadTheirTwoAndRunEqualSteps) {
  TempDir dir;
  const std::string shards = dir.path() + "/shards", run = dir.path() + "/run";
  // 403 images: shards of 100, 101, 101, 101 records, so rank 0 holds 201 and rank 1 202
  ASSERT_EQ(run_process({FITSCOPE_CLI, "make-images", shards, "--count", "403", "--size", "16", "--layout", "tfrecord",
                         "--shards", "4"}).exit_code, 0);
  const ProcessResult r = run_process(launch(2, {FITSCOPE_CLI, "train", "--model", "mlp", "--epochs", "2", "--data",
                                                 "tfrecord:" + shards + "/*.tfrecord", "--batch-size", "20", "--run-dir", run,
                                                 "--dist-timeout", "20", "--quiet"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto summary = nlohmann::json::parse(read_file(run + "/summary.json"));
  const auto& streams = summary.at("streams");
  EXPECT_EQ(streams.at("shards"), 4);
  ASSERT_EQ(streams.at("ranks").size(), 2u);
  for (int rank = 0; rank < 2; ++rank) {
    const auto& read = streams.at("ranks").at(rank);
    EXPECT_EQ(read.at("rank"), rank);
    EXPECT_EQ(read.at("shards"), nlohmann::json::array({shards + "/train-0000" + std::to_string(rank) + "-of-00004.tfrecord",
                                                         shards + "/train-0000" + std::to_string(rank + 2) + "-of-00004.tfrecord"}));
    EXPECT_EQ(read.at("records"), 201 + rank);
  }
  EXPECT_EQ(streams.at("records_per_epoch"), 201);  // the fewest: 11 batches of 20 on each rank, each epoch
  EXPECT_EQ(summary.at("steps"), 22);
  EXPECT_NE(summary.at("warnings").dump().find(": 1 of the job's 403 records are not read in any epoch: each rank reads as "
                                               "many as the fewest any rank holds (201; the ranks hold 201, 202)"),
            std::string::npos) << summary.at("warnings").dump();
}

TEST(Distributed, OneShardForTwoRanksExitsTwoOnEachRankNamingTheCounts) {
  TempDir dir;
  const std::string shards = dir.path() + "/shards";
  ASSERT_EQ(run_process({FITSCOPE_CLI, "make-images", shards, "--count", "50", "--size", "16", "--layout", "tar"}).exit_code, 0);
  const ProcessResult r = run_process(launch(2, {FITSCOPE_CLI, "train", "--model", "mlp", "--epochs", "1", "--data",
                                                 "tar:" + shards + "/*.tar", "--dist-timeout", "20", "--quiet"}));
  EXPECT_EQ(r.exit_code, 1);  // the launcher's: its ranks exited 2, bad input, not restarted
  for (const char* rank : {"[rank 0]", "[rank 1]"}) {
    EXPECT_NE(r.err.find(std::string(rank) + " fitscope: --data tar:" + shards + "/*.tar: 1 shard for 2 ranks: each rank "
                                             "needs at least one shard"),
              std::string::npos) << r.err;
  }
}

TEST(Distributed, BackupsWithoutARunDirectoryAreRefusedOnEveryRank) {
  const ProcessResult r = run_process(launch(2, {FITSCOPE_CLI, "train", "--checkpoint-every", "epoch", "--epochs", "1"}));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("[rank 1] fitscope: --checkpoint-every in a data-parallel run needs --run-dir"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("rank 0 (pid "), std::string::npos) << r.err;
}

TEST(Distributed, NcclOnTheCpuIsRefusedOnEveryRankNamingTheFlags) {
  const ProcessResult r = run_process(launch(2, {FITSCOPE_CLI, "train", "--dist-backend", "nccl", "--device", "cpu", "--epochs", "1"}));
  EXPECT_EQ(r.exit_code, 1);
  for (const char* rank : {"[rank 0]", "[rank 1]"}) {
    EXPECT_NE(r.err.find(std::string(rank) + " fitscope: --dist-backend nccl needs a GPU per rank, but --device cpu trains on the CPU"),
              std::string::npos)
        << r.err;
  }
}

TEST(Distributed, RanksStartedWithOtherSettingsAreRefusedOnEveryRankNamingTheSettingAndBothValues) {
  TempDir dir;
  const std::string train = std::string(FITSCOPE_CLI) + " train --model mlp --epochs 1 --synthetic-size 320 --threads 1 --quiet " +
                            "--run-dir " + dir.path() + "/run";
  // rank 1 another learning rate (and its own --workers, which a machine may choose for itself)
  const ProcessResult lr = run_process(launch(2, {"/bin/sh", "-c", train + " --lr 0.00$((RANK + 1)) --workers $RANK"}));
  EXPECT_EQ(lr.exit_code, 1);  // the launcher's: its ranks exited 2, bad input, not restarted
  for (const char* rank : {"[rank 0]", "[rank 1]"}) {
    EXPECT_NE(lr.err.find(std::string(rank) + " fitscope: rank 1 was started with other settings than the chief (rank 0): "
                                              "lr = 0.002 on rank 1, 0.001 on rank 0"),
              std::string::npos) << lr.err;
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/run/summary.json"));
  // another batch size: named as well, before any collective of training meets a tensor of another shape
  const ProcessResult batch = run_process(launch(2, {"/bin/sh", "-c", train + " --batch-size $((32 << RANK))"}));
  EXPECT_NE(batch.err.find("[rank 0] fitscope: rank 1 was started with other settings than the chief (rank 0): batch-size = 64 on "
                           "rank 1, 32 on rank 0"),
            std::string::npos) << batch.err;
  // the same settings, each rank its own workers: trains
  const ProcessResult same = run_process(launch(2, {"/bin/sh", "-c", train + " --workers $RANK --overwrite"}));
  EXPECT_EQ(same.exit_code, 0) << same.err;
}

/// A launched run whose stderr is read as it comes, line by line, with arrival times.
class LiveLaunch {
 public:
  explicit LiveLaunch(const std::vector<std::string>& argv) {
    int pipes[2];
    EXPECT_EQ(::pipe2(pipes, O_CLOEXEC), 0);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(pipes[1], STDERR_FILENO);
      const int null = ::open("/dev/null", O_WRONLY);
      ::dup2(null, STDOUT_FILENO);
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    ::close(pipes[1]);
    fd_ = pipes[0];
  }
  ~LiveLaunch() {
    if (!status_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    ::close(fd_);
  }
  /// Reads until a line matches `pattern` (returns its first group and arrival) or `limit` passes.
  std::optional<std::pair<std::string, Clock::time_point>> wait_for(const std::string& pattern, std::chrono::seconds limit) {
    const std::regex re(pattern);
    const auto until = Clock::now() + limit;
    while (true) {
      for (std::size_t i = checked_; i < lines_.size(); ++i) {
        std::smatch m;
        if (std::regex_search(lines_[i].first, m, re)) {
          checked_ = i + 1;
          return std::make_pair(m.size() > 1 ? m[1].str() : m[0].str(), lines_[i].second);
        }
      }
      checked_ = lines_.size();
      if (Clock::now() >= until || !read_some(until)) return std::nullopt;
    }
  }
  /// Waits for the launcher's exit status (-1 after `limit`).
  int wait_exit(std::chrono::seconds limit) {
    const auto until = Clock::now() + limit;
    while (Clock::now() < until) {
      read_some(Clock::now() + std::chrono::milliseconds(50));
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        status_ = status;
        while (read_some(Clock::now() + std::chrono::milliseconds(50))) {
        }
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
    }
    return -1;
  }
  pid_t pid() const { return pid_; }
  std::string text() const {
    std::string all;
    for (const auto& l : lines_) all += l.first + "\n";
    return all;
  }

 private:
  bool read_some(Clock::time_point until) {
    pollfd p{fd_, POLLIN, 0};
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
    if (::poll(&p, 1, static_cast<int>(std::max<int64_t>(ms, 0))) <= 0) return false;
    char buffer[4096];
    const ssize_t n = ::read(fd_, buffer, sizeof buffer);
    if (n <= 0) return false;
    partial_.append(buffer, static_cast<std::size_t>(n));
    for (std::size_t nl; (nl = partial_.find('\n')) != std::string::npos;) {
      lines_.emplace_back(partial_.substr(0, nl), Clock::now());
      partial_.erase(0, nl + 1);
    }
    return true;
  }

  pid_t pid_ = -1;
  int fd_ = -1;
  std::optional<int> status_;
  std::string partial_;
  std::vector<std::pair<std::string, Clock::time_point>> lines_;
  std::size_t checked_ = 0;
};

bool alive(pid_t pid) {
  if (::kill(pid, 0) != 0) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string skip, state;
  stat >> skip >> skip >> state;
  return state != "Z";
}

/// Kills or stops rank 1 mid-run; rank 0 must fail within 1.5x --dist-timeout naming rank 1, and the
/// launcher, told by rank 0 that it names a peer, must stop at once: exit 1 naming rank 1 on its last
/// line, no rank left behind, well before the fixed 30 s grace it used to give.
void lose_rank_one(int sig) {
  constexpr int kTimeoutS = 3;
  TempDir dir;
  LiveLaunch run(launch(2, {FITSCOPE_CLI, "train", "--model", "mlp", "--epochs", "1000", "--synthetic-size", "2000",
                            "--run-dir", dir.path() + "/run", "--no-progress", "--dist-timeout", std::to_string(kTimeoutS)}));
  const auto pid = run.wait_for(R"(rank 1 of 2: pid (\d+))", std::chrono::seconds(30));
  ASSERT_TRUE(pid) << run.text();
  // training has started once the chief writes its first epoch's files
  const auto started_until = Clock::now() + std::chrono::seconds(60);
  while (!std::filesystem::exists(dir.path() + "/run/metrics.csv") && Clock::now() < started_until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const pid_t victim = std::stoi(pid->first);
  const auto sent = Clock::now();
  ASSERT_EQ(::kill(victim, sig), 0);
  const auto failed = run.wait_for(R"(\[rank 0\] fitscope: the run failed: (.*))", std::chrono::seconds(4 * kTimeoutS));
  ASSERT_TRUE(failed) << run.text();
  EXPECT_NE(failed->first.find("rank 1"), std::string::npos) << failed->first;
  const double seconds = std::chrono::duration<double>(failed->second - sent).count();
  EXPECT_LT(seconds, 1.5 * kTimeoutS) << "rank 0 noticed after " << seconds << " s";
  EXPECT_EQ(run.wait_exit(std::chrono::seconds(4 * kTimeoutS)), 1) << run.text();
  std::cout << "[ measured ] SIG" << sigabbrev_np(sig) << " of rank 1 to the launcher's exit: "
            << std::chrono::duration<double>(Clock::now() - sent).count() << " s (--dist-timeout " << kTimeoutS << ")\n";
  EXPECT_FALSE(alive(victim)) << "the launcher left rank 1 behind";
  const std::string text = run.text();
  const auto last = text.rfind("fitscope launch: failed: ");
  ASSERT_NE(last, std::string::npos) << text;
  EXPECT_NE(text.substr(last).find("rank 1"), std::string::npos) << text.substr(last);
}

TEST(Distributed, KilledRankIsNamedBySurvivorWithinTheTimeoutAndTheLauncherFails) { lose_rank_one(SIGKILL); }

TEST(Distributed, StoppedRankIsNamedBySurvivorWithinTheTimeoutAndTheLauncherCleansUp) { lose_rank_one(SIGSTOP); }

/// Rank 1 is stopped until rank 0 gives up on it, then continued: rank 0 names rank 1, and rank 1's
/// own log names itself (it did not run), not rank 0, whose store it finds gone.
TEST(Distributed, ARankStoppedAndThenContinuedNamesItselfNotThePeerThatGaveUpOnIt) {
  constexpr int kTimeoutS = 3;
  TempDir dir;
  const std::string port = std::to_string(20000 + ::getpid() % 20000);
  const auto rank = [&](int r) {  // as torchrun starts a rank (env execs it: its pid is the rank's)
    return std::vector<std::string>{"/usr/bin/env", "RANK=" + std::to_string(r), "LOCAL_RANK=0", "WORLD_SIZE=2",
                                    "LOCAL_WORLD_SIZE=1", "MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + port, FITSCOPE_CLI, "train",
                                    "--model", "mlp", "--epochs", "1000", "--synthetic-size", "2000", "--run-dir", dir.path() + "/run",
                                    "--no-progress", "--dist-timeout", std::to_string(kTimeoutS)};
  };
  LiveLaunch one(rank(1));
  LiveLaunch zero(rank(0));
  ASSERT_TRUE(wait_for_file(dir.path() + "/run/metrics.csv", 60)) << zero.text() << one.text();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_EQ(::kill(one.pid(), SIGSTOP), 0);
  EXPECT_EQ(zero.wait_exit(std::chrono::seconds(4 * kTimeoutS)), 1) << zero.text();
  EXPECT_NE(zero.text().find("rank 1"), std::string::npos) << zero.text();
  ASSERT_EQ(::kill(one.pid(), SIGCONT), 0);
  EXPECT_EQ(one.wait_exit(std::chrono::seconds(4 * kTimeoutS)), 1) << one.text();
  const std::string said = one.text();
  EXPECT_NE(said.find("this rank (1), which did not run for "), std::string::npos) << said;
  EXPECT_EQ(said.find("rank 0 (it hosts the rendezvous store"), std::string::npos) << said;
}

/// The addresses on which a socket of this network namespace listens on `port`, as /proc/net/tcp and
/// tcp6 write them (hex: 0100007F is 127.0.0.1, zeros are every address).
std::set<std::string> listening_on(int port) {
  char hex_port[8];
  std::snprintf(hex_port, sizeof hex_port, "%04X", port);
  std::set<std::string> addresses;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::istringstream lines(read_file(table));
    std::string line;
    std::getline(lines, line);  // the header
    while (std::getline(lines, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state;
      fields >> slot >> local >> remote >> state;
      const std::size_t colon = local.find(':');
      if (state == "0A" && colon != std::string::npos && local.substr(colon + 1) == hex_port) addresses.insert(local.substr(0, colon));
    }
  }
  return addresses;
}

TEST(Distributed, TheRendezvousStoreListensWhereTheLaunchHelpSays) {
  const ProcessResult help = run_process({FITSCOPE_CLI, "launch", "--help"});
  std::string said;  // the help's words, its line breaks and indentation as single spaces
  std::istringstream words(help.out);
  for (std::string word; words >> word;) said += word + " ";
  const bool address_only = said.find("on this address only") != std::string::npos;
  ASSERT_TRUE(address_only || said.find("on every address of its host") != std::string::npos) << help.out;
  EXPECT_NE(said.find("it keeps nobody out"), std::string::npos) << help.out;
  const int port = 20000 + (::getpid() + 7919) % 20000;
  TempDir dir;
  // rank 0 of two, alone: it serves the store and waits for rank 1
  LiveLaunch zero({"/usr/bin/env", "RANK=0", "LOCAL_RANK=0", "WORLD_SIZE=2", "LOCAL_WORLD_SIZE=1", "MASTER_ADDR=127.0.0.1",
                   "MASTER_PORT=" + std::to_string(port), FITSCOPE_CLI, "train", "--model", "mlp", "--epochs", "1", "--run-dir",
                   dir.path() + "/run", "--dist-timeout", "20"});
  std::set<std::string> addresses;
  for (const auto until = Clock::now() + std::chrono::seconds(20); addresses.empty() && Clock::now() < until;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    addresses = listening_on(port);
  }
  if (address_only) {
    EXPECT_EQ(addresses, (std::set<std::string>{"0100007F"})) << "127.0.0.1 alone";
  } else {
    ASSERT_EQ(addresses.size(), 1u);
    EXPECT_EQ(addresses.begin()->find_first_not_of('0'), std::string::npos) << *addresses.begin() << ": every address";
  }
}

/// Two tasks started as srun starts them (its variables only, no torchrun's) train as one data-parallel
/// job into one run directory, not as two runs on all the data.
/// Two tasks of an srun step (`task(r)` starts task r with srun's variables and `fitscope train`
/// after them) train as one job into one run directory.
void two_slurm_tasks_train_as_one_job(const std::function<std::vector<std::string>(int, const std::vector<std::string>&)>& task,
                                      const std::string& run_dir) {
  const std::vector<std::string> train = {FITSCOPE_CLI, "train", "--model", "mlp", "--epochs", "1", "--synthetic-size", "400",
                                          "--run-dir", run_dir, "--dist-timeout", "30", "--quiet"};
  LiveLaunch one(task(1, train));
  LiveLaunch zero(task(0, train));
  EXPECT_EQ(zero.wait_exit(std::chrono::seconds(90)), 0) << zero.text();
  EXPECT_EQ(one.wait_exit(std::chrono::seconds(30)), 0) << one.text();
  const auto summary = nlohmann::json::parse(read_file(run_dir + "/summary.json"));
  EXPECT_EQ(summary.at("world_size"), 2);
  EXPECT_EQ(summary.at("ranks").size(), 2u);
}

TEST(Distributed, TwoSlurmTasksTrainAsOneJobIntoOneRunDirectory) {
  TempDir dir;
  const std::string job = std::to_string(1000 + ::getpid() % 9000);  // the store's port: 15000 + job
  two_slurm_tasks_train_as_one_job(
      [&](int r, const std::vector<std::string>& train) {
        const std::string id = std::to_string(r);
        std::vector<std::string> argv = {"/usr/bin/env", "SLURM_PROCID=" + id, "SLURM_NTASKS=2", "SLURM_STEP_NUM_TASKS=2",
                                         "SLURM_LOCALID=" + id, "SLURM_NODEID=0", "SLURM_STEP_TASKS_PER_NODE=2",
                                         "SLURM_STEP_NODELIST=localhost", "SLURM_JOB_ID=" + job, "SLURM_STEP_ID=0"};
        argv.insert(argv.end(), train.begin(), train.end());
        return argv;
      },
      dir.path() + "/run");
}

/// torchrun's default (static) rendezvous: its agent hosts the TCPStore on MASTER_PORT and tells the
/// ranks so (TORCHELASTIC_USE_AGENT_STORE=True). A Python process holding a torch TCPStore stands in for
/// the agent; both ranks connect to it as clients and train (rank 0 hosting a store of its own there
/// failed with "Address already in use").
TEST(Distributed, TorchrunsAgentStoreIsJoinedAsAClientByEveryRank) {
  TempDir dir;
  const int port = 20000 + (::getpid() + 4243) % 20000;
  LiveLaunch agent({FITSCOPE_PYTHON, "-c",
                    "import sys, time, datetime, torch.distributed as d\n"
                    "a = ('127.0.0.1', " + std::to_string(port) + ", 3, True, datetime.timedelta(seconds=60), False)\n"
                    // torch >= 2.4 serves the store on libuv unless told not to, which Debian's builds lack;
                    // an older torch has no such argument
                    "try:\n  s = d.TCPStore(*a, use_libuv=False)\n"
                    "except TypeError:\n  s = d.TCPStore(*a)\n"
                    "print('agent store up', file=sys.stderr, flush=True)\n"
                    "time.sleep(120)\n"});
  ASSERT_TRUE(agent.wait_for("agent store up", std::chrono::seconds(60))) << agent.text();
  const auto rank = [&](int r) {
    return std::vector<std::string>{"/usr/bin/env", "TORCHELASTIC_USE_AGENT_STORE=True", "TORCHELASTIC_RESTART_COUNT=0",
                                    "RANK=" + std::to_string(r), "LOCAL_RANK=" + std::to_string(r), "WORLD_SIZE=2", "LOCAL_WORLD_SIZE=2",
                                    "MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + std::to_string(port), FITSCOPE_CLI, "train", "--model",
                                    "mlp", "--epochs", "1", "--synthetic-size", "400", "--run-dir", dir.path() + "/run",
                                    "--dist-timeout", "30", "--quiet"};
  };
  LiveLaunch one(rank(1));
  LiveLaunch zero(rank(0));
  EXPECT_EQ(zero.wait_exit(std::chrono::seconds(90)), 0) << zero.text();
  EXPECT_EQ(one.wait_exit(std::chrono::seconds(30)), 0) << one.text();
  EXPECT_EQ(nlohmann::json::parse(read_file(dir.path() + "/run/summary.json")).at("world_size"), 2);
}

TEST(Distributed, CheckpointOfATwoRankRunResumesInATwoRankRun) {
  TempDir dir;
  const std::string whole = dir.path() + "/whole", killed = dir.path() + "/killed";
  auto train = [](const std::string& run_dir, std::vector<std::string> extra) {
    return backed_up_mlp(run_dir, "5", std::move(extra));
  };
  ASSERT_EQ(run_process(train(whole, {})).exit_code, 0);
  // the chief kills itself inside its third backup (each is ~95 kB); rank 1 loses its peer
  std::string script = "FITSCOPE_TEST_KILL_AFTER_CHECKPOINT_BYTES=250000";
  for (const auto& a : train(killed, {})) script += " '" + a + "'";
  const ProcessResult crash = run_process({"/bin/sh", "-c", script});
  EXPECT_EQ(crash.exit_code, 1) << crash.err;
  EXPECT_NE(crash.err.find("rank 0"), std::string::npos) << crash.err;
  const ProcessResult resumed = run_process(train(killed, {"--resume"}));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.out.find("[rank 0] Resumed from epoch "), std::string::npos) << resumed.out;
  EXPECT_NE(resumed.out.find(", step 40 (" + killed + "/backup/ckpt-000000000040.fitscope)"), std::string::npos) << resumed.out;
  EXPECT_EQ(read_file(whole + "/model.weights.pt"), read_file(killed + "/model.weights.pt"));
}

/// Ctrl-C at the launcher reaches every rank (it passes the signal on): they agree to stop at the same
/// step, the chief writes the run directory and a backup, the launcher exits 130, and the run resumes
/// to the uninterrupted run's weights.
TEST(Distributed, ASignalToTheLauncherStopsEveryRankTogetherAndTheRunResumes) {
  TempDir dir;
  const std::string whole = dir.path() + "/whole", stopped = dir.path() + "/stopped";
  auto train = [](const std::string& run_dir, std::vector<std::string> extra) {
    return backed_up_mlp(run_dir, "20", std::move(extra));
  };
  ASSERT_EQ(run_process(train(whole, {})).exit_code, 0);
  fitscope::testing::Child child(train(stopped, {}));
  ASSERT_TRUE(fitscope::testing::wait_for_file(stopped + "/backup/ckpt-000000000040.fitscope"));
  child.signal(SIGINT);
  const ProcessResult r = child.wait();
  ASSERT_EQ(r.exit_code, 130) << r.err;
  const auto summary = nlohmann::json::parse(read_file(stopped + "/summary.json"));
  EXPECT_TRUE(summary.at("interrupted").get<bool>());
  const int64_t steps = summary.at("steps").get<int64_t>();
  EXPECT_LT(steps, 800) << "the run ended before the signal";
  const ProcessResult resumed = run_process(train(stopped, {"--resume"}));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  // the chief backs up where it saw the signal; the ranks stop together at most one step later
  const bool from_stop = resumed.out.find(", step " + std::to_string(steps) + " (" + stopped + "/backup/") != std::string::npos;
  const bool from_step_before = resumed.out.find(", step " + std::to_string(steps - 1) + " (" + stopped + "/backup/") != std::string::npos;
  EXPECT_NE(resumed.out.find("[rank 0] Resumed from epoch "), std::string::npos) << resumed.out;
  EXPECT_TRUE(from_stop || from_step_before) << resumed.out;
  EXPECT_EQ(read_file(whole + "/model.weights.pt"), read_file(stopped + "/model.weights.pt"));
}

/// `launch --max-restarts`: rank `victim` is SIGKILLed mid-epoch after the first backups; the launcher
/// stops the other rank, starts the group again, which resumes from the newest backup, and the job
/// ends with exit 0 and the uninterrupted run's weights. summary.json accounts the restart.
void restart_after_killing(int victim) {
  TempDir dir;
  const std::string whole = dir.path() + "/whole", killed = dir.path() + "/killed";
  ASSERT_EQ(run_process(backed_up_mlp(whole, "5", {})).exit_code, 0);
  LiveLaunch run(backed_up_mlp(killed, "5", {}, {"--max-restarts", "2"}));
  const auto pid = run.wait_for("rank " + std::to_string(victim) + R"( of 2: pid (\d+))", std::chrono::seconds(30));
  ASSERT_TRUE(pid) << run.text();
  ASSERT_TRUE(wait_for_file(killed + "/backup/ckpt-000000000020.fitscope"));
  const auto sent = Clock::now();
  ASSERT_EQ(::kill(std::stoi(pid->first), SIGKILL), 0);
  const auto again = run.wait_for(R"(restart 1: training again from step (\d+))", std::chrono::seconds(60));
  ASSERT_TRUE(again) << run.text();
  std::cout << "[ measured ] SIGKILL of rank " << victim << " to training again: "
            << std::chrono::duration<double>(again->second - sent).count() << " s (--dist-timeout 5)\n";
  ASSERT_EQ(run.wait_exit(std::chrono::seconds(120)), 0) << run.text();
  EXPECT_NE(run.text().find("restart 1 of 2, after: rank " + std::to_string(victim) + " (pid " + pid->first +
                            ") was killed by signal 9"),
            std::string::npos)
      << run.text();
  EXPECT_EQ(read_file(whole + "/model.weights.pt"), read_file(killed + "/model.weights.pt"));
  const auto restarts = nlohmann::json::parse(read_file(killed + "/summary.json")).at("restarts");
  EXPECT_EQ(restarts.at("count"), 1);
  const auto& event = restarts.at("events").at(0);
  EXPECT_EQ(event.at("resumed_from_step").get<int64_t>(), std::stoll(again->first));
  EXPECT_GE(event.at("resumed_from_step").get<int64_t>(), 20);
  EXPECT_GT(event.at("lost_s").get<double>(), 0);
  EXPECT_GT(restarts.at("lost_fraction").get<double>(), 0);
  EXPECT_LT(restarts.at("lost_fraction").get<double>(), 1);
  const std::string report = read_file(killed + "/report.html");
  EXPECT_NE(report.find("<h2>Restarts</h2>"), std::string::npos);
  EXPECT_NE(report.find("restart 1 of the job: resumed from step " + again->first), std::string::npos);
}

TEST(Distributed, AKilledRankIsRestartedWithTheGroupAndTheJobEndsWithTheUninterruptedWeights) { restart_after_killing(1); }

TEST(Distributed, AKilledChiefWhichHostsTheStoreIsRestartedWithTheGroupAndTheJobEndsWithTheUninterruptedWeights) {
  restart_after_killing(0);
}

TEST(Distributed, ARankThatFailsOnEveryAttemptEndsTheJobAfterTheRestartsNamingIt) {
  TempDir dir;
  std::string train = "'" + std::string(FITSCOPE_CLI) + "' train --model mlp --epochs 1 --quiet --dist-timeout 1 --run-dir '" +
                      dir.path() + "/run'";
  const ProcessResult r = run_process(launch(2, {"/bin/sh", "-c", "if [ \"$RANK\" = 1 ]; then exit 7; fi; exec " + train},
                                             {"--max-restarts", "2"}));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("restart 1 of 2, after: rank 1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("restart 2 of 2, after: rank 1"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("restart 3"), std::string::npos) << r.err;
  const std::string last = r.err.substr(r.err.rfind("fitscope launch: "));
  EXPECT_NE(last.find("failed: rank 1 (pid "), std::string::npos) << last;
  EXPECT_NE(last.find(") exited with status 7 (after 2 restarts)"), std::string::npos) << last;
}

TEST(Distributed, BadUsageIsNotRestarted) {
  const ProcessResult r = run_process(
      launch(2, {FITSCOPE_CLI, "train", "--checkpoint-every", "epoch", "--epochs", "1"}, {"--max-restarts", "3"}));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.err.find("restart 1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(bad usage or input: not restarted)"), std::string::npos) << r.err;
}

/// Out of file descriptors after a few ranks started: the launcher fails naming the rank it could not
/// start, and stops and reaps the ones it had started.
TEST(Distributed, RanksAlreadyStartedAreStoppedWhenALaterOneCannotStart) {
  std::string cmd = "ulimit -n 20; exec";
  for (const auto& arg : launch(8, {"/bin/sh", "-c", "exec sleep 60"})) cmd += " '" + arg + "'";
  const ProcessResult r = run_process({"/bin/sh", "-c", cmd});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("cannot start rank"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Too many open files (the ranks already started are stopped)"), std::string::npos) << r.err;
  const std::regex started(R"(rank \d+ of 8: pid (\d+))");
  int count = 0;
  for (auto it = std::sregex_iterator(r.err.begin(), r.err.end(), started); it != std::sregex_iterator(); ++it, ++count) {
    EXPECT_FALSE(alive(std::stoi((*it)[1].str()))) << "rank left running: " << (*it)[0].str();
  }
  EXPECT_GE(count, 1) << "no rank started before the descriptors ran out: " << r.err;
}

/// On one node the ranks meet in a file only this user reads: no port is opened for the store.
TEST(Distributed, AOneNodeLaunchOpensNoPortForItsStore) {
  TempDir dir;
  const std::string port = free_port();
  std::vector<std::string> args = {FITSCOPE_CLI, "launch", "--nproc-per-node", "2", "--master-port", port, "--",
                                   FITSCOPE_CLI, "train", "--model", "mlp", "--epochs", "1000", "--synthetic-size", "2000",
                                   "--verbose", "2", "--run-dir", dir.path() + "/run"};
  fitscope::testing::Child run(args);
  const bool training = wait_for_file(dir.path() + "/run/metrics.csv");
  const bool listening = !listening_on(std::stoi(port)).empty();
  run.signal(SIGINT);  // the launcher passes it on: the ranks stop too
  const ProcessResult r = run.wait();
  ASSERT_TRUE(training) << r.err;
  EXPECT_FALSE(listening) << "the store listens on port " << port;
  EXPECT_EQ(r.exit_code, 130) << r.err;
}

/// Several nodes meet in rank 0's TCP store: a rank of another job (another --job-id) on the same port
/// is refused, naming both ids.
TEST(Distributed, ARankOfAnotherJobOnTheSamePortIsRefused) {
  const std::string port = free_port();
  auto node = [&](int rank, const std::string& id) {
    return std::vector<std::string>{FITSCOPE_CLI, "launch", "--nnodes", "2", "--node-rank", std::to_string(rank),
                                    "--nproc-per-node", "1", "--master-port", port, "--job-id", id, "--",
                                    FITSCOPE_CLI, "train", "--model", "mlp", "--epochs", "1", "--verbose", "2", "--dist-timeout", "3"};
  };
  fitscope::testing::Child first(node(0, "job-a"));
  const ProcessResult other = run_process(node(1, "job-b"));
  EXPECT_EQ(other.exit_code, 1) << other.err;
  EXPECT_NE(other.err.find("[rank 1] fitscope: rank 1: the rendezvous store at 127.0.0.1:" + port +
                           " belongs to another job (job id 'job-a', this rank's 'job-b')"),
            std::string::npos)
      << other.err;
  EXPECT_NE(first.wait().exit_code, 0);
}

/// `fitscope launch --nnodes 2:3` on three machines, one rank each (`node(i, flags, command)` is machine
/// i's launcher): the third is lost (its launcher and rank SIGKILLed) after the first backups; the
/// other two launchers restart their ranks, meet without it, and the job finishes on two ranks from
/// the newest backup, each example trained on once an epoch.
void lose_one_of_three_machines(
    const std::function<std::vector<std::string>(int, const std::string&, const std::vector<std::string>&)>& node) {
  TempDir dir;
  const std::string run = dir.path() + "/run", records = dir.path() + "/records";
  std::filesystem::create_directories(records);
  const std::vector<std::string> command = {DIST_WORKER, "elastic", run, records, "0", "15"};
  const std::string flags = "--nnodes 2:3 --max-restarts 1 --join-wait 2";
  LiveLaunch a(node(0, flags, command)), b(node(1, flags, command)), c(node(2, flags, command));
  const auto lost = c.wait_for(R"(rank 2 of 3: pid (\d+))", std::chrono::seconds(60));
  ASSERT_TRUE(lost) << a.text() << c.text();
  ASSERT_TRUE(wait_for_file(run + "/backup/ckpt-000000000004.fitscope"));
  ::kill(c.pid(), SIGKILL);  // the machine: its launcher and its rank
  ::kill(std::stoi(lost->first), SIGKILL);
  const auto again = a.wait_for(R"(restart 1: training again from step (\d+))", std::chrono::seconds(120));
  ASSERT_TRUE(again) << a.text();
  ASSERT_EQ(a.wait_exit(std::chrono::seconds(120)), 0) << a.text();
  ASSERT_EQ(b.wait_exit(std::chrono::seconds(30)), 0) << b.text();
  EXPECT_NE(a.text().find("attempt 0: 3 of 3 nodes (node ranks 0 1 2)"), std::string::npos) << a.text();
  EXPECT_NE(a.text().find("attempt 1: 2 of 3 nodes (node ranks 0 1)"), std::string::npos) << a.text();
  const int64_t resumed = std::stoll(again->first);
  ASSERT_LT(resumed, 40) << "the machine was lost after the first epoch";
  std::vector<int64_t> before;
  for (int rank = 0; rank < 3; ++rank) {
    const auto mine = trained(records, 3, rank);
    ASSERT_GE(static_cast<int64_t>(mine.size()), resumed * 8) << "rank " << rank << " of 3";
    before.insert(before.end(), mine.begin(), mine.begin() + resumed * 8);
  }
  expect_each_example_once_an_epoch(before, {trained(records, 2, 0), trained(records, 2, 1)}, 480);
  const auto summary = nlohmann::json::parse(read_file(run + "/summary.json"));
  EXPECT_EQ(summary["world_size"], 2);
  EXPECT_EQ(summary["restarts"]["count"], 1);
}

TEST(Distributed, AnElasticJobOfThreeNodesThatLosesOneFinishesOnTheTwoLeft) {  // launchers on loopback
  const std::string port = free_port();
  lose_one_of_three_machines([&](int node, const std::string& flags, const std::vector<std::string>& command) {
    std::vector<std::string> argv = {FITSCOPE_CLI, "launch", "--node-rank", std::to_string(node), "--nproc-per-node", "1",
                                     "--master-port", port};
    std::istringstream words(flags);
    for (std::string w; words >> w;) argv.push_back(w);
    argv.push_back("--");
    argv.insert(argv.end(), command.begin(), command.end());
    return argv;
  });
}

/// Two machines (launchers on loopback, one rank each): rank 1 fails by itself on a data error; the
/// first machine's launcher, which sees only rank 0 fail for want of it, names rank 1 and its error.
TEST(Distributed, TheLauncherOfAnotherMachineNamesTheRankThatFailedFirstWithItsError) {
  TempDir dir;
  const std::string port = free_port();
  auto node = [&](int rank) {
    return std::vector<std::string>{FITSCOPE_CLI, "launch", "--nnodes", "2", "--node-rank", std::to_string(rank),
                                    "--nproc-per-node", "1", "--master-port", port, "--",
                                    DIST_WORKER, "fail", dir.path() + "/run", "5"};
  };
  LiveLaunch b(node(1));
  const ProcessResult a = run_process(node(0));
  EXPECT_EQ(a.exit_code, 1) << a.err;
  EXPECT_EQ(b.wait_exit(std::chrono::seconds(60)), 1) << b.text();
  const std::string last = a.err.substr(a.err.rfind("fitscope launch: failed: "));
  EXPECT_NE(last.find("rank 0 (pid "), std::string::npos) << a.err;
  EXPECT_NE(last.find("naming a peer: rank 1 failed first, by itself: shard-00001.tfrecord: bad record at offset 1234"),
            std::string::npos)
      << a.err;
  EXPECT_NE(b.text().find("fitscope launch: failed: rank 1 (pid "), std::string::npos) << b.text();
}

/// Machines: `n` network namespaces ("hosts" 10.213.0.1, .2, ...) joined by a bridge in a namespace of
/// its own, removed by the destructor; `why_not` says why this machine cannot make them.
class Hosts {
 public:
  explicit Hosts(int n) : n_(n), ns_("fs" + std::to_string(::getpid()) + "n" + std::to_string(count_++)) {  // + "h0": <= 15 chars
    std::string setup = "ip netns add " + ns_ + "s && ip -n " + ns_ + "s link add br0 type bridge && ip -n " + ns_ + "s link set br0 up";
    for (int i = 0; i < n; ++i) {
      const std::string host = ns_ + std::to_string(i), inside = ns_ + "h" + std::to_string(i), port = ns_ + "p" + std::to_string(i);
      setup += " && ip netns add " + host + " && ip link add " + inside + " type veth peer name " + port + " && ip link set " + inside +
               " netns " + host + " && ip link set " + port + " netns " + ns_ + "s && ip -n " + ns_ + "s link set " + port +
               " master br0 && ip -n " + ns_ + "s link set " + port + " up && ip -n " + host + " addr add 10.213.0." +
               std::to_string(i + 1) + "/24 dev " + inside + " && ip -n " + host + " link set " + inside + " up && ip -n " + host +
               " link set lo up";
    }
    const ProcessResult made = run_process({"/bin/sh", "-c", setup});
    if (made.exit_code != 0) why_not = "exit " + std::to_string(made.exit_code) + ": " + made.out + made.err;
  }
  ~Hosts() {
    std::string remove = "ip netns del " + ns_ + "s";
    for (int i = 0; i < n_; ++i) remove += "; ip netns del " + ns_ + std::to_string(i);
    run_process({"/bin/sh", "-c", remove + "; true"});
  }
  /// The shell command of host `node`'s launcher, which it replaces (exec): one rank per host, rank 0's
  /// host the first; `flags` (--nnodes among them) before the command.
  std::string launch(int node, const std::string& flags, const std::vector<std::string>& command) const {
    std::string cmd = "exec ip netns exec " + ns_ + std::to_string(node) + " '" + FITSCOPE_CLI + "' launch --node-rank " +
                      std::to_string(node) + " --nproc-per-node 1 --master-addr 10.213.0.1 --master-port 29400 " + flags + " --";
    for (const auto& arg : command) cmd += " '" + arg + "'";
    return cmd;
  }
  /// The shell command that runs `argv` on host `node`, which it replaces (exec).
  std::string on(int node, const std::vector<std::string>& argv) const {
    std::string cmd = "exec ip netns exec " + ns_ + std::to_string(node);
    for (const auto& arg : argv) cmd += " '" + arg + "'";
    return cmd;
  }
  std::string why_not;

 private:
  static inline int count_ = 0;
  int n_;
  std::string ns_;
};

#define SKIP_WITHOUT(hosts)                                                                                     \
  if (!(hosts).why_not.empty())                                                                                  \
  GTEST_SKIP() << "skipped: this machine cannot create network namespaces, veth pairs and a bridge (" << (hosts).why_not \
               << "); the run across hosts was not tested"

TEST(Distributed, TwoHostsOverANetworkTrainTogether) {
  Hosts hosts(2);
  SKIP_WITHOUT(hosts);
  TempDir dir;
  auto node = [&](int rank) {
    return hosts.launch(rank, "--nnodes 2", {FITSCOPE_CLI, "train", "--model", "mlp", "--epochs", "2", "--synthetic-size", "1000", "--verbose", "2",
                                   "--dist-timeout", "20", "--run-dir", dir.path() + "/node" + std::to_string(rank)});
  };
  const ProcessResult both = run_process(
      {"/bin/sh", "-c", "(" + node(1) + ") > " + dir.path() + "/b.out 2>&1 & b=$!; (" + node(0) + "); a=$?; wait $b; echo \"a=$a b=$?\""});
  EXPECT_NE(both.out.find("a=0 b=0"), std::string::npos) << both.out << both.err << read_file(dir.path() + "/b.out");
  const auto summary = nlohmann::json::parse(read_file(dir.path() + "/node0/summary.json"));
  EXPECT_EQ(summary["world_size"], 2);
  EXPECT_EQ(summary["ranks"].size(), 2u);
  EXPECT_NE(read_file(dir.path() + "/b.out").find("rank 1 of 2 finished"), std::string::npos);
}

/// Rank 1, alone on the second host, is SIGKILLed: its launcher starts it again, the first host's
/// launcher sees rank 0 fail naming it and starts rank 0 again; the two meet in a fresh store, resume
/// from the backup in the run directory both hosts read, and end with the uninterrupted run's weights.
TEST(Distributed, TwoHostsRestartTogetherAfterARankOfOneIsKilled) {
  Hosts hosts(2);
  SKIP_WITHOUT(hosts);
  TempDir dir;
  const std::string whole = dir.path() + "/whole", killed = dir.path() + "/killed";
  ASSERT_EQ(run_process(backed_up_mlp(whole, "10", {})).exit_code, 0);
  const auto command = backed_up_mlp_command(killed, "10", {});
  LiveLaunch b({"/bin/sh", "-c", hosts.launch(1, "--nnodes 2 --max-restarts 1", command)});
  LiveLaunch a({"/bin/sh", "-c", hosts.launch(0, "--nnodes 2 --max-restarts 1", command)});
  const auto pid = b.wait_for(R"(rank 1 of 2: pid (\d+))", std::chrono::seconds(30));
  ASSERT_TRUE(pid) << b.text();
  ASSERT_TRUE(wait_for_file(killed + "/backup/ckpt-000000000020.fitscope"));
  ASSERT_EQ(::kill(std::stoi(pid->first), SIGKILL), 0);
  EXPECT_EQ(a.wait_exit(std::chrono::seconds(120)), 0) << a.text();
  EXPECT_EQ(b.wait_exit(std::chrono::seconds(30)), 0) << b.text();
  EXPECT_NE(a.text().find("restart 1 of 1, after: rank 0"), std::string::npos) << a.text();
  EXPECT_NE(b.text().find("restart 1 of 1, after: rank 1 (pid " + pid->first + ") was killed by signal 9"), std::string::npos)
      << b.text();
  EXPECT_EQ(read_file(whole + "/model.weights.pt"), read_file(killed + "/model.weights.pt"));
  EXPECT_EQ(nlohmann::json::parse(read_file(killed + "/summary.json")).at("restarts").at("count"), 1);
}

TEST(Distributed, AnElasticJobOfThreeHostsThatLosesOneFinishesOnTheTwoLeft) {
  Hosts hosts(3);
  SKIP_WITHOUT(hosts);
  lose_one_of_three_machines([&](int node, const std::string& flags, const std::vector<std::string>& command) {
    return std::vector<std::string>{"/bin/sh", "-c", hosts.launch(node, flags, command)};
  });
}

/// An elastic job of two to three hosts started on two: node 0 waits for the fewest (2), then the join
/// wait without another, and the job trains on the two from the start, each example once an epoch.
TEST(Distributed, AnElasticJobOfUpToThreeHostsStartedOnTwoTrainsOnTheTwo) {
  Hosts hosts(3);
  SKIP_WITHOUT(hosts);
  TempDir dir;
  const std::string run = dir.path() + "/run", records = dir.path() + "/records";
  std::filesystem::create_directories(records);
  const std::vector<std::string> command = {DIST_WORKER, "elastic", run, records, "0"};
  const std::string flags = "--nnodes 2:3 --max-restarts 1 --join-wait 2";
  LiveLaunch a({"/bin/sh", "-c", hosts.launch(0, flags, command)}), b({"/bin/sh", "-c", hosts.launch(1, flags, command)});
  ASSERT_EQ(a.wait_exit(std::chrono::seconds(120)), 0) << a.text();
  ASSERT_EQ(b.wait_exit(std::chrono::seconds(30)), 0) << b.text();
  EXPECT_NE(a.text().find("attempt 0: 2 of 3 nodes (node ranks 0 1)"), std::string::npos) << a.text();
  expect_each_example_once_an_epoch({}, {trained(records, 2, 0), trained(records, 2, 1)}, 480);
  const auto summary = nlohmann::json::parse(read_file(run + "/summary.json"));
  EXPECT_EQ(summary["world_size"], 2);
  EXPECT_EQ(summary["restarts"]["count"], 0);
}

/// srun's variables alone, one task on each of two hosts: the tasks meet at the first host of the
/// step's node list and train as one job into one run directory.
TEST(Distributed, TwoSlurmTasksOnTwoHostsTrainAsOneJob) {
  Hosts hosts(2);
  SKIP_WITHOUT(hosts);
  TempDir dir;
  two_slurm_tasks_train_as_one_job(
      [&](int r, const std::vector<std::string>& train) {
        const std::string id = std::to_string(r);
        std::vector<std::string> argv = {"/usr/bin/env", "SLURM_PROCID=" + id, "SLURM_NTASKS=2", "SLURM_STEP_NUM_TASKS=2",
                                         "SLURM_LOCALID=0", "SLURM_NODEID=" + id, "SLURM_STEP_TASKS_PER_NODE=1(x2)",
                                         "SLURM_STEP_NODELIST=10.213.0.1,10.213.0.2", "SLURM_JOB_ID=4242", "SLURM_STEP_ID=0"};
        argv.insert(argv.end(), train.begin(), train.end());
        return std::vector<std::string>{"/bin/sh", "-c", hosts.on(r, argv)};
      },
      dir.path() + "/run");
}

}  // namespace
}  // namespace fitscope::testing
