// `fitscope train` end to end: the real binary, real processes, real run directories.

#include <gtest/gtest.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "process.hpp"

using fitscope::testing::expect_usage_error;
using fitscope::testing::lines_of;
using fitscope::testing::ProcessResult;
using fitscope::testing::read_file;
using fitscope::testing::run_fitscope;
using fitscope::testing::run_process;
using fitscope::testing::TempDir;
using nlohmann::json;

namespace {

const std::vector<std::string> kPhases = {"data_wait", "h2d",     "forward",   "backward",   "comm", "optimizer",
                                          "graph",     "metrics", "callbacks", "checkpoint", "other"};

/// Checks what every run directory must satisfy and returns summary.json.
json check_run_directory(const std::string& dir) {
  const json summary = json::parse(read_file(dir + "/summary.json"));
  double shares = 0;
  for (const auto& phase : kPhases) {
    const auto& p = summary.at("phases").at(phase);
    shares += p.at("share").get<double>();
    EXPECT_LE(p.at("p50_ms").get<double>(), p.at("p90_ms").get<double>()) << phase;
    EXPECT_LE(p.at("p90_ms").get<double>(), p.at("p99_ms").get<double>()) << phase;
    EXPECT_LE(p.at("p99_ms").get<double>(), p.at("max_ms").get<double>()) << phase;
  }
  EXPECT_NEAR(shares, 1.0, 0.01);

  const auto epochs = lines_of(read_file(dir + "/metrics.csv"));
  EXPECT_EQ(epochs.front().rfind("epoch,", 0), 0u) << epochs.front();
  EXPECT_NE(epochs.front().find(",loss"), std::string::npos) << epochs.front();
  EXPECT_EQ(static_cast<int64_t>(epochs.size()) - 1, static_cast<int64_t>(summary.at("epochs").get<int64_t>()));
  const auto rows = lines_of(read_file(dir + "/steps.csv"));
  EXPECT_EQ(rows.front(),
            "epoch,batch,rank,step_ms,data_wait_ms,h2d_ms,forward_ms,backward_ms,comm_ms,optimizer_ms,graph_ms,"
            "metrics_ms,callbacks_ms,checkpoint_ms,other_ms,probed");
  const auto steps = summary.at("steps").get<int64_t>();
  EXPECT_EQ(static_cast<int64_t>(rows.size()) - 1, steps);
  // the steps after the warm-up: measured, or probed for the layers or the probe's warm-up before it
  // (left out of the distributions)
  const json& layers = summary.at("layers");
  const int64_t probed = layers.at("probed_steps").get<int64_t>() + layers.at("probe_warmups").get<int64_t>();
  EXPECT_EQ(summary.at("measured_steps").get<int64_t>() + probed, steps - summary.at("warmup_steps").get<int64_t>());
  int64_t probed_rows = 0;
  for (std::size_t i = 1; i < rows.size(); ++i) probed_rows += rows[i].substr(rows[i].rfind(',') + 1) == "1";
  EXPECT_EQ(probed_rows, probed);
  for (const char* key : {"wall_s", "samples_per_s", "threads", "world_size", "batch_size", "device",
                          "step_ms", "callbacks", "ranks", "stragglers", "clock_overhead_ns_per_step",
                          "verdict"}) {
    EXPECT_TRUE(summary.contains(key)) << key;
  }
  return summary;
}


}  // namespace

TEST(TrainCommand, TheDemoRunReachesNinetyFivePercentAndWritesAConsistentRunDirectory) {
#ifdef FITSCOPE_SANITIZED
  GTEST_SKIP() << "1,500 steps of the seed CNN judged by their accuracy (four minutes under the sanitizers): run in "
                  "the plain build; the sanitizers check the same train command in the shorter tests";
#endif
  TempDir tmp;
  const std::string dir = tmp.path() + "/run";
  const ProcessResult r = run_fitscope({"train", "--run-dir", dir});  // the demo's settings
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json summary = check_run_directory(dir);
  EXPECT_GE(summary.at("logs").at("val_accuracy").get<double>(), 0.95);
  // --threads auto: the thread search (settling steps and 5 measured steps per candidate) is warm-up too
  const json& threads = summary.at("threads");
  EXPECT_EQ(threads.at("chosen_by").get<std::string>(), "auto");
  EXPECT_GE(threads.at("search_steps").get<int64_t>(), 6 * static_cast<int64_t>(threads.at("candidates").size()));
  EXPECT_EQ(summary.at("warmup_steps").get<int64_t>(), 5 + threads.at("search_steps").get<int64_t>());
  for (const json& c : threads.at("candidates")) EXPECT_GT(c.at("step_ms").get<double>(), 0) << c;
  for (const char* pool : {"training", "intra_op", "blas", "loader", "callbacks", "checkpoint", "communication", "other"}) {
    EXPECT_TRUE(summary.at("cpu_utilization").at("pools").contains(pool)) << pool;
  }
  EXPECT_NE(r.out.find("Threads: intra-op "), std::string::npos) << r.out;
  EXPECT_EQ(summary.at("steps").get<int64_t>(), 3 * 500);  // 16000 training examples / 32, 3 epochs
  EXPECT_EQ(summary.at("batch_size").get<int64_t>(), 32);
  const std::string device = summary.at("device").get<std::string>();
  EXPECT_TRUE(device == "cpu" || device == "cuda:0") << device;  // --device auto
  for (const char* key : {"loss", "accuracy", "val_loss", "val_accuracy"}) {
    EXPECT_TRUE(summary.at("logs").contains(key)) << key;
  }
  // the output is not a terminal: one progress line per epoch, then the breakdown
  EXPECT_NE(r.out.find("Epoch 3/3\n500/500 - "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Verdict: "), std::string::npos);
  EXPECT_NE(r.out.find("Final validation accuracy: "), std::string::npos);
  EXPECT_NE(r.out.find("Run directory: " + dir), std::string::npos);
}

TEST(TrainCommand, LeavesTheChosenNumberOfWarmupStepsOutOfTheCounts) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/run";
  const ProcessResult r = run_fitscope({"train", "--model", "mlp", "--synthetic-size", "1000", "--epochs", "2",
                                    "--batch-size", "40", "--warmup-steps", "7", "--threads", "1",
                                    "--run-dir", dir, "--verbose", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json summary = check_run_directory(dir);
  EXPECT_EQ(summary.at("steps").get<int64_t>(), 40);  // 800 / 40 = 20 an epoch
  EXPECT_EQ(summary.at("warmup_steps").get<int64_t>(), 7);
  EXPECT_EQ(summary.at("measured_steps").get<int64_t>() + summary.at("layers").at("probed_steps").get<int64_t>(), 33);
  EXPECT_EQ(summary.at("threads").at("intra_op").get<int64_t>(), 1);
  EXPECT_EQ(summary.at("threads").at("blas").get<int64_t>(), 1);
  EXPECT_EQ(summary.at("threads").at("chosen_by").get<std::string>(), "flag");
  EXPECT_EQ(summary.at("model").get<std::string>(), "mlp");
}

TEST(TrainCommand, AnOversubscribedRunGetsContentionAdviceNamingTheFlag) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/run";
  const std::string twice = std::to_string(2 * std::max(1u, std::thread::hardware_concurrency()));
  const ProcessResult r = run_fitscope({"train", "--model", "mlp", "--synthetic-size", "1000", "--epochs", "1",
                                        "--threads", twice, "--run-dir", dir, "--verbose", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json summary = check_run_directory(dir);
  const std::string contention = summary.at("verdict").at("contention").get<std::string>();
  EXPECT_NE(contention.find(twice + " intra-op threads on "), std::string::npos) << contention;
  EXPECT_NE(contention.find("or leave --threads auto to measure"), std::string::npos) << contention;
  // printed as its own line; the machine's load, where another process ran beside it, comes first
  const std::size_t line = r.out.find("\nContention: ");
  ASSERT_NE(line, std::string::npos) << r.out;
  EXPECT_NE(r.out.substr(line, r.out.find('\n', line + 1) - line).find(twice + " intra-op threads on "), std::string::npos)
      << r.out;
  expect_usage_error({"train", "--threads", "0"}, "--threads: expected auto or a thread count in [1, 1024], got '0'");
  expect_usage_error({"train", "--blas-threads", "many"}, "expected auto or a thread count");
}

/// A run under `taskset -c 0`, and in a cgroup with a CPU quota made by the test, counts the one core it
/// may use (threads, CPU line), says what limits it, and counts the quota's throttling.
TEST(TrainCommand, CountsTheCoresItsAffinityAndCgroupQuotaLeaveIt) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one CPU: no limit to see";
  TempDir tmp;
  const auto run_under = [&](const std::string& prefix, const std::string& name) {
    const std::string dir = tmp.path() + "/" + name;
    // steps enough to outlast a quota period of the fit's own (600 examples' fit can end inside one)
    const ProcessResult r = run_process({"/bin/sh", "-c", prefix + " \"$0\" \"$@\"", FITSCOPE_CLI, "train", "--model", "mlp",
                                          "--synthetic-size", "12000", "--epochs", "1", "--run-dir", dir});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return std::pair{r, dir};
  };
  const std::string machine = std::to_string(std::thread::hardware_concurrency());
  const auto [pinned, pinned_dir] = run_under("exec taskset -c 0", "pinned");
  const json threads = check_run_directory(pinned_dir).at("threads");
  EXPECT_EQ(threads.at("cores"), 1);
  EXPECT_EQ(threads.at("intra_op"), 1);
  EXPECT_EQ(threads.at("cores_limit"), "affinity 1 of " + machine);
  EXPECT_EQ(json::parse(read_file(pinned_dir + "/summary.json")).at("cpu_utilization").at("cores"), 1);
  EXPECT_NE(pinned.out.find("on 1 core (affinity 1 of " + machine + ")"), std::string::npos) << pinned.out;

  // a cgroup v1 cpu controller with a quota of a fifth of a CPU, which holds the run back (cgroup v2 and
  // unprivileged runs: skipped; so is a sanitized build, five times slower there)
#ifdef FITSCOPE_SANITIZED
  GTEST_SKIP() << "the quota case runs in the plain build (a fifth of a CPU for a sanitized process is slow)";
#endif
  const std::string cgroup = "/sys/fs/cgroup/cpu/fitscope-test-" + std::to_string(::getpid());
  std::error_code ec;
  if (!std::filesystem::create_directory(cgroup, ec)) {
    GTEST_SKIP() << "the quota case needs a cgroup v1 cpu controller this user may write (" << cgroup << ": " << ec.message() << ")";
  }
  std::ofstream(cgroup + "/cpu.cfs_period_us") << "100000\n";
  std::ofstream(cgroup + "/cpu.cfs_quota_us") << "20000\n";
  const auto [quota, quota_dir] = run_under("echo $$ > " + cgroup + "/cgroup.procs && exec", "quota");
  std::filesystem::remove(cgroup, ec);
  const json held = check_run_directory(quota_dir);
  EXPECT_EQ(held.at("threads").at("cores_limit"), "cgroup quota 0.2 CPUs of " + machine);
  EXPECT_NE(quota.out.find("on 1 core (cgroup quota 0.2 CPUs of " + machine + ")"), std::string::npos) << quota.out;
  EXPECT_GT(held.at("cpu_utilization").at("throttled_periods").get<int64_t>(), 0);
  EXPECT_NE(quota.out.find("Throttled: the cgroup's CPU quota held the process back in "), std::string::npos) << quota.out;
}

TEST(LaunchCommand, BadUsageExitsTwoNamingTheFlagOrVariable) {
  expect_usage_error({"launch", "--nproc-per-node", "2"}, "COMMAND");
  expect_usage_error({"launch", "--nproc-per-node", "0", "--", "true"}, "--nproc-per-node");
  expect_usage_error({"launch", "--nnodes", "2", "--node-rank", "2", "--", "true"}, "--node-rank must be in [0, 2), got 2");
  expect_usage_error({"train", "--dist-timeout", "0"}, "--dist-timeout");
  const ProcessResult r = run_process({"/usr/bin/env", "WORLD_SIZE=two", FITSCOPE_CLI, "train", "--epochs", "1"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("WORLD_SIZE=two: expected an integer"), std::string::npos) << r.err;
}

TEST(TrainCommand, HelpListsTheFlagsAndExitsZero) {
  const ProcessResult r = run_fitscope({"train", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  for (const char* flag : {"--model", "--data", "--epochs", "--batch-size", "--lr", "--optimizer",
                           "--validation-split", "--seed", "--warmup-steps", "--threads", "--run-dir",
                           "--quiet", "--verbose", "--device"}) {
    EXPECT_NE(r.out.find(flag), std::string::npos) << flag;
  }
}

TEST(TrainCommand, HelpGroupsTheFlagsAndShowsValuesAndDefaultsPlainly) {
  const std::string help = run_fitscope({"train", "--help"}).out;
  std::size_t at = 0;
  for (const char* group : {"Model:", "Data:", "Optimisation:", "Schedule:", "Run length and validation:",
                            "Timing and threads:", "Checkpoints:", "Output:", "Distributed"}) {
    const std::size_t found = help.find(std::string("\n") + group, at);
    EXPECT_NE(found, std::string::npos) << group << " (in this order)";
    at = found == std::string::npos ? at : found;
  }
  EXPECT_NE(help.find("--lr X "), std::string::npos);
  EXPECT_NE(help.find("--optimizer adam|adamw|sgd "), std::string::npos);
  EXPECT_NE(help.find("--epochs N "), std::string::npos);
  EXPECT_NE(help.find("Learning rate (default 0.001)"), std::string::npos);
  for (const char* notation : {"FLOAT", "INT", "TEXT", ":{", "=0.001"}) EXPECT_EQ(help.find(notation), std::string::npos) << notation;
  for (const auto& line : lines_of(help)) EXPECT_LE(line.size(), 110u) << line;

  const std::string sweep = run_fitscope({"sweep", "--help"}).out;
  EXPECT_NE(sweep.find("--batch-sizes N,... "), std::string::npos);
  EXPECT_NE(sweep.find("--lr X "), std::string::npos);
  for (const char* train_only : {"--epochs", "--resume", "--checkpoint-every", "--validation-split", "--batch-size "}) {
    EXPECT_EQ(sweep.find(train_only), std::string::npos) << train_only;
  }
}

TEST(TrainCommand, AMisspeltFlagOrCommandGetsTheNearestNameAndSweepRefusesTrainOnlyFlags) {
  expect_usage_error({"train", "--epoch", "3"}, "fitscope train: unknown flag --epoch (did you mean --epochs?)");
  expect_usage_error({"train", "--batchsize=8"}, "fitscope train: unknown flag --batchsize (did you mean --batch-size?)");
  expect_usage_error({"trian"}, "fitscope: unknown command 'trian' (did you mean train?)");
  expect_usage_error({"sweep", "--epochs", "3"}, "fitscope sweep: --epochs is a flag of fitscope train, which sweep does not use");
  expect_usage_error({"sweep", "--resume"}, "fitscope sweep: --resume is a flag of fitscope train");
  expect_usage_error({"sweep", "--checkpoint-every", "epoch"}, "fitscope sweep: --checkpoint-every is a flag of fitscope train");
}

TEST(TrainCommand, BadFlagsAndValuesExitTwoNamingTheFlagAndWhatIsAllowed) {
  expect_usage_error({"train", "--epochs", "0"}, "fitscope train: --epochs: expected an integer in [1, 1000000], got '0'");
  expect_usage_error({"train", "--batch-size", "many"}, "--batch-size: expected an integer in [1, 1000000], got 'many' (not a number)");
  expect_usage_error({"train", "--optimizer", "rmsprop"}, "--optimizer: rmsprop not in {adam,adamw,sgd}");
  expect_usage_error({"train", "--optimizer", "sgd", "--nesterov"}, "nesterov needs a momentum > 0, got 0");
  expect_usage_error({"train", "--momentum", "1"}, "--momentum: expected a number in [0, 1), got '1'");
  expect_usage_error({"train", "--momentum", "0.9", "--epochs", "1"}, "apply to optimizer sgd only, got adam");
  expect_usage_error({"train", "--validation-split", "1.5"},
                     "--validation-split: expected a fraction in [0, 1), got '1.5'");
  expect_usage_error({"train", "--lr", "-1"}, "--lr: expected a finite number > 0, got '-1'");
  expect_usage_error({"train", "--lr", "inf"}, "--lr: expected a finite number > 0, got 'inf'");
  expect_usage_error({"train", "--lr", "nan"}, "--lr: expected a finite number > 0, got 'nan'");
  expect_usage_error({"train", "--slow-callback-ms", "inf"},
                     "--slow-callback-ms: expected a number of milliseconds in [0, 3600000], got 'inf'");
  expect_usage_error({"train", "--dist-timeout", "1e300"},
                     "--dist-timeout: expected a number of seconds in (0, 1000000], got '1e300'");
  expect_usage_error({"launch", "--grace", "inf", "--", "true"}, "--grace: expected a number of seconds in [0, 1000000], got 'inf'");
  expect_usage_error({"train", "--num-classes", "3", "--epochs", "1"},
                     "--num-classes 3: --data synthetic has label 9 (expected labels below --num-classes)");
  expect_usage_error({"train", "--model", "resnet"}, "--model: expected cnn, mlp or FILE.pt, got 'resnet'");
  expect_usage_error({"train", "--device", "tpu"}, "--device: device tpu: unknown device (expected auto, cpu, cuda or cuda:N)");
  expect_usage_error({"train", "--device", "cuda:x"}, "--device: device cuda:x: unknown device (expected auto, cpu, cuda or cuda:N)");
  expect_usage_error({"train", "--device", "cuda:7"}, "--device: device cuda:7: ");  // no GPU here, or fewer than 8
  expect_usage_error({"train", "--bogus"}, "fitscope train: unknown flag --bogus (see fitscope train --help)");
  expect_usage_error({"train", "--data", "idx:/no/such/dir"},
                     "--data idx:/no/such/dir: IDX directory /no/such/dir: does not exist");
  expect_usage_error({"train", "--data", "parquet:x"},
                     "--data parquet:x: unknown data set (expected synthetic, idx:DIR, cifar10:DIR, csv:FILE, "
                     "images:DIR, tfrecord:GLOB or tar:GLOB)");
  expect_usage_error({"train", "--augment", "rotate"},
                     "--augment: 'rotate': unknown augmentation 'rotate' (expected flip, brightness, crop)");
  expect_usage_error({"train", "--workers", "-1"}, "--workers: expected auto or a worker count in [0, 256], got '-1'");
  expect_usage_error({"train", "--checkpoint-every", "0"},
                     "--checkpoint-every: expected epoch, or a number of batches >= 1, got '0'");
  expect_usage_error({"train", "--resume"}, "--resume needs the --run-dir of the run to continue");
  expect_usage_error({"train", "--clip-norm", "-1"}, "--clip-norm: expected a finite number >= 0, got '-1'");
  expect_usage_error({"train", "--clip-norm", "1", "--clip-value", "1"}, "--clip-norm and --clip-value: choose one (got both)");
  expect_usage_error({"train", "--accumulate", "0"}, "--accumulate: expected an integer in [1, 1000000], got '0'");
  expect_usage_error({"train", "--lr-schedule", "step", "--epochs", "1"}, "--lr-schedule step needs --lr-decay-every N");
  expect_usage_error({"train", "--lr-warmup", "5"}, "--lr-warmup needs --lr-schedule (it sets a schedule's parameter)");
  expect_usage_error({"train", "--lr-schedule", "cosine", "--reduce-lr-on-plateau", "2"},
                     "--lr-schedule and --reduce-lr-on-plateau: choose one (both set the learning rate)");
  expect_usage_error({"train", "--max-time", "10x"}, "--max-time: expected a duration > 0 such as 90, 90s, 10m or 2h, got '10x'");
  expect_usage_error({"train", "--validation-data", "mnist"},
                     "--validation-data mnist: unknown data set (expected synthetic, idx:DIR, cifar10:DIR, csv:FILE, "
                     "images:DIR, tfrecord:GLOB or tar:GLOB)");
  expect_usage_error({"train", "--loss", "hinge"}, "--loss: hinge not in {cross-entropy,mse,mae,huber,bce-with-logits}");
  expect_usage_error({"train", "--class-weight", "1,2"},
                     "--class-weight: 2 weights, but --data synthetic has 10 classes (expected one weight per class)");
  expect_usage_error({"train", "--loss", "mse", "--label-smoothing", "0.1", "--epochs", "1"},
                     "label smoothing and class weights apply to the cross-entropy loss only, got mse");
}

/// A diverging run fails at the batch whose loss is not finite (TerminateOnNaN, on by default), says
/// so, and marks summary.json; an earlier run's best checkpoint in the directory (--overwrite) does not
/// survive it.
TEST(TrainCommand, ADivergingRunFailsAtTheBatchWithANonFiniteLossAndMarksTheSummary) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/run";
  ASSERT_EQ(run_fitscope({"train", "--epochs", "1", "--synthetic-size", "300", "--threads", "1", "--quiet", "--run-dir", dir}).exit_code, 0);
  ASSERT_TRUE(std::filesystem::exists(dir + "/checkpoints/best.fitscope"));  // an earlier run's best
  const ProcessResult r = run_fitscope({"train", "--optimizer", "sgd", "--lr", "1e9", "--epochs", "2", "--synthetic-size",
                                        "1000", "--threads", "1", "--verbose", "2", "--run-dir", dir, "--overwrite"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("fitscope: the run failed: the loss of batch "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("not a finite number: the training diverged (TerminateOnNaN)"), std::string::npos) << r.err;
  const json summary = json::parse(read_file(dir + "/summary.json"));
  EXPECT_NE(summary.at("failure").get<std::string>().find("the training diverged"), std::string::npos) << summary.dump();
  EXPECT_FALSE(std::filesystem::exists(dir + "/checkpoints/best.fitscope"));
  // opted out, the same run goes on to its end
  const ProcessResult on = run_fitscope({"train", "--optimizer", "sgd", "--lr", "1e9", "--epochs", "2", "--synthetic-size",
                                         "1000", "--threads", "1", "--verbose", "2", "--run-dir", dir, "--no-terminate-on-nan",
                                         "--overwrite"});
  EXPECT_EQ(on.exit_code, 0) << on.err;
}

/// A second run into a run directory is refused (exit 2, the files named, nothing touched) unless it
/// replaces the first (--overwrite: old event files, CSVs and checkpoints gone, the user's own files
/// kept) or continues it (--resume).
TEST(TrainCommand, ASecondRunIntoARunDirectoryIsRefusedUnlessItOverwritesOrResumes) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/run";
  const std::vector<std::string> train = {"train", "--model", "mlp", "--epochs", "1", "--synthetic-size", "300",
                                          "--threads", "1", "--verbose", "2", "--run-dir", dir};
  ASSERT_EQ(run_fitscope(train).exit_code, 0);
  std::ofstream(dir + "/notes.txt") << "mine";
  const auto event_files = [&] {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
      if (e.path().filename().string().rfind("events.out.tfevents.", 0) == 0) names.push_back(e.path().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  };
  const std::vector<std::string> first_events = event_files();
  ASSERT_EQ(first_events.size(), 2u);  // train/ and validation/
  const std::string first_steps = read_file(dir + "/steps.csv");

  const ProcessResult again = run_fitscope(train);
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_EQ(again.err, "fitscope: --run-dir " + dir + " holds an earlier run (best.weights.pt, checkpoints, config.toml, manifest.json, metrics.csv, model.weights.pt, "
                       "report.html, steps.csv, summary.json, trace.json, train, validation): pass --resume to continue "
                       "it (with backups), --overwrite to replace it, or choose another --run-dir\n");
  EXPECT_EQ(event_files(), first_events);
  EXPECT_EQ(read_file(dir + "/steps.csv"), first_steps);

  std::vector<std::string> overwrite = train;
  overwrite.push_back("--overwrite");
  const ProcessResult replaced = run_fitscope(overwrite);
  ASSERT_EQ(replaced.exit_code, 0) << replaced.err;
  const std::vector<std::string> second_events = event_files();
  ASSERT_EQ(second_events.size(), 2u);
  for (const auto& name : first_events) EXPECT_FALSE(std::filesystem::exists(name)) << name;
  EXPECT_EQ(read_file(dir + "/notes.txt"), "mine");
}

TEST(TrainCommand, AReadOnlyRunDirectoryExitsTwoBeforeTrainingAndNamesIt) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/run";
  std::filesystem::create_directories(dir);
  // a read-only bind mount: root ignores a directory's permission bits
  const ProcessResult mounted =
      run_process({"/bin/sh", "-c", "mount --bind '" + dir + "' '" + dir + "' && mount -o remount,ro,bind '" + dir + "' 2>&1"});
  if (mounted.exit_code != 0) GTEST_SKIP() << "skipped: cannot make a read-only bind mount here (" << mounted.out << mounted.err << ")";
  struct Unmount {
    std::string dir;
    ~Unmount() { run_process({"/bin/sh", "-c", "umount '" + dir + "'"}); }
  } unmount{dir};
  const ProcessResult r = run_fitscope({"train", "--model", "mlp", "--epochs", "1", "--synthetic-size", "500", "--run-dir", dir});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--run-dir " + dir + ": cannot write in it (Read-only file system)"), std::string::npos) << r.err;
}

TEST(TrainCommand, ARunDirectoryThatCannotBeCreatedExitsTwoAndNamesIt) {
  TempDir tmp;
  const std::string file = tmp.path() + "/a-file";
  std::ofstream(file) << "not a directory";
  expect_usage_error({"train", "--run-dir", file + "/run", "--epochs", "1"},
                     "--run-dir " + file + "/run: cannot create the directory");
  EXPECT_EQ(read_file(file), "not a directory");
}

namespace {

/// A short run of the seed MLP (or `model`) with extra flags; returns summary.json.
json short_run(const std::string& dir, std::vector<std::string> extra, ProcessResult* result = nullptr,
               const std::string& model = "mlp") {
  std::vector<std::string> args = {"train", "--model", model, "--synthetic-size", "1200", "--epochs", "1",
                                   "--threads", "1", "--run-dir", dir, "--verbose", "2"};
  args.insert(args.end(), extra.begin(), extra.end());
  const ProcessResult r = run_fitscope(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  if (result) *result = r;
  return check_run_directory(dir);
}

}  // namespace

TEST(Accounting, ASlowLoaderMakesTheRunHighlyInputBound) {
  TempDir tmp;
  const json s = short_run(tmp.path() + "/run", {"--load-delay-ms", "20", "--workers", "1", "--prefetch", "8"});
  EXPECT_EQ(s.at("verdict").at("bound"), "input");
  EXPECT_EQ(s.at("verdict").at("level"), "highly");
  EXPECT_NE(s.at("verdict").at("advice").get<std::string>().find("raise --workers from 1 to 2"), std::string::npos);
  EXPECT_EQ(s.at("loader").at("auto"), json({{"workers", false}, {"prefetch", false}}));
  EXPECT_TRUE(s.at("loader").at("changes").empty());
}

TEST(Accounting, WorkersAutoAddsWorkersToASleepingLoaderAndSaysWhatItCouldNotHide) {
  // 20 ms of sleep per batch against a step of well under a millisecond: the first window jumps to
  // the most workers, and even they leave the step waiting
  TempDir tmp;
  ProcessResult r;
  const json s = short_run(tmp.path() + "/run", {"--load-delay-ms", "20"}, &r);
  const json& loader = s.at("loader");
  EXPECT_EQ(loader.at("auto"), json({{"workers", true}, {"prefetch", true}}));
  const json& changes = loader.at("changes");
  ASSERT_GE(changes.size(), 2u) << loader.dump();
  EXPECT_EQ(changes[0].at("workers"), 1);
  EXPECT_EQ(changes[0].at("why"), "start: workers auto, prefetch auto");
  EXPECT_GT(changes[1].at("workers").get<int64_t>(), 1);
  EXPECT_NE(changes[1].at("why").get<std::string>().find("trying"), std::string::npos);
  EXPECT_GT(loader.at("batch_build_ms").get<double>(), 19.0);
  EXPECT_EQ(s.at("verdict").at("bound"), "input");
  const std::string advice = s.at("verdict").at("advice").get<std::string>();
  EXPECT_NE(advice.find("although --workers auto settled on " + std::to_string(loader.at("workers").get<int64_t>())),
            std::string::npos) << advice;
  EXPECT_NE(advice.find("the builds mostly wait rather than compute"), std::string::npos) << advice;
  EXPECT_NE(r.out.find("(auto), prefetch"), std::string::npos) << r.out;
  const std::string config = read_file(tmp.path() + "/run/config.toml");  // the count it settled on, what was asked
  EXPECT_NE(config.find("\nworkers = " + std::to_string(loader.at("workers").get<int64_t>()) + "  # asked: \"auto\"\n"),
            std::string::npos) << config;
  const json trace = json::parse(read_file(tmp.path() + "/run/trace.json"));
  int counters = 0;
  for (const json& e : trace.at("traceEvents")) counters += e.at("ph") == "C" && e.at("name") == "loader";
  EXPECT_EQ(counters, static_cast<int>(changes.size()));
  expect_usage_error({"train", "--workers", "many"}, "--workers: expected auto or a worker count in [0, 256], got 'many'");
  expect_usage_error({"train", "--prefetch", "0"}, "--prefetch: expected auto or a batch count in [1, 4096], got '0'");
}

TEST(Accounting, ASlowSyncCallbackMakesTheRunCallbackBoundAndIsNamedInAWarning) {
  TempDir tmp;
  ProcessResult r;
  const json s = short_run(tmp.path() + "/run", {"--slow-callback-ms", "20"}, &r);
  EXPECT_EQ(s.at("verdict").at("bound"), "callbacks");
  EXPECT_NE(r.err.find("warning: callback SlowCallback.on_train_batch_end takes "), std::string::npos) << r.err;
  EXPECT_EQ(s.at("warnings").size(), 1u);
  const json& slowest = s.at("callbacks").at(0);
  EXPECT_EQ(slowest.at("name"), "SlowCallback");
  EXPECT_EQ(slowest.at("hook"), "on_train_batch_end");
  EXPECT_EQ(slowest.at("mode"), "sync");
  EXPECT_EQ(slowest.at("calls").get<int64_t>(), 30);  // 960 training examples / 32
  for (const char* key : {"mean_ms", "p99_ms", "total_ms", "stall_ms"}) EXPECT_TRUE(slowest.contains(key)) << key;
}

TEST(Accounting, AnAsyncCallbackIsReportedAsAsyncWithItsStallAndTracedOnItsOwnThread) {
  TempDir tmp;
  const json s = short_run(tmp.path() + "/run", {"--slow-callback-ms", "1", "--callback-mode", "async"});
  const json trace = json::parse(read_file(tmp.path() + "/run/trace.json"));
  int64_t spans = 0;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") == "X" && e.at("name") == "SlowCallback.on_train_batch_end") {
      EXPECT_EQ(e.at("tid").get<int64_t>(), 2);
      ++spans;
    }
  }
  EXPECT_EQ(spans, 30);
  bool found = false;
  for (const auto& c : s.at("callbacks")) {
    // ModelCheckpoint (the best checkpoint) reads the model, StopOnSignal and TerminateOnNaN stop the
    // fit: they stay on the training thread
    const std::string name = c.at("name");
    const bool changes_training = name.rfind("ModelCheckpoint(", 0) == 0 || name == "StopOnSignal" || name == "TerminateOnNaN";
    EXPECT_EQ(c.at("mode"), changes_training ? "sync" : "async") << c.at("name");
    if (c.at("name") == "SlowCallback" && c.at("hook") == "on_train_batch_end") {
      found = true;
      EXPECT_EQ(c.at("calls").get<int64_t>(), 30);
      EXPECT_GE(c.at("stall_ms").get<double>(), 0.0);
      // its own calls on the callback thread: the sleep of 1 ms each
      EXPECT_GE(c.at("p50_ms").get<double>(), 0.9);
    }
  }
  EXPECT_TRUE(found);
}

/// An async hook whose code is slow is the one named, in the callbacks table, the warning and the
/// verdict; the hook queued behind it, which the training thread waits on, is not.
TEST(Accounting, ASlowAsyncHookIsNamedNotTheHookQueuedBehindIt) {
#ifdef FITSCOPE_SANITIZED
  GTEST_SKIP() << "the verdict weighs a 3 ms hook against the step's own time, which the sanitizers stretch several "
                  "times (a loaded sanitizer build was judged input-bound): run in the plain build";
#endif
  TempDir tmp;
  // 100 steps: the async queue (64 calls) fills, and the slow hook bounds the run on any machine
  const std::string dir = tmp.path() + "/run";
  const ProcessResult r = run_fitscope({"train", "--model", "mlp", "--synthetic-size", "4000", "--epochs", "1", "--threads", "1",
                                        "--run-dir", dir, "--verbose", "2", "--slow-callback-ms", "3", "--callback-mode", "async"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json s = check_run_directory(dir);
  ASSERT_FALSE(s.at("callbacks").empty());
  ASSERT_EQ(s.at("verdict").at("bound"), "callbacks") << s.at("verdict").dump();
  EXPECT_EQ(s.at("callbacks")[0].at("name"), "SlowCallback");
  EXPECT_EQ(s.at("callbacks")[0].at("hook"), "on_train_batch_end");
  std::string warnings;
  for (const auto& w : s.at("warnings")) warnings += w.get<std::string>() + "\n";
  EXPECT_NE(warnings.find("callback SlowCallback.on_train_batch_end (async) runs"), std::string::npos) << warnings;
  EXPECT_EQ(warnings.find("on_train_batch_begin"), std::string::npos) << warnings;
  EXPECT_NE(s.at("verdict").at("advice").get<std::string>().find("most in SlowCallback.on_train_batch_end"),
            std::string::npos)
      << s.at("verdict").dump();
}

TEST(Accounting, WithoutSlowPartsTheSeedCnnIsComputeBoundAndOtherIsSmall) {
  TempDir tmp;
  const json s = short_run(tmp.path() + "/run", {}, nullptr, "cnn");
  const std::string bound = s.at("verdict").at("bound");
  EXPECT_TRUE(bound == "compute" || bound == "overhead") << bound;
  EXPECT_LT(s.at("phases").at("other").at("share").get<double>(), 0.15);
  EXPECT_GT(s.at("clock_overhead_ns_per_step").get<double>(), 0.0);
  EXPECT_GT(s.at("cpu_utilization").at("process_cores").get<double>(), 0.0);
}

TEST(Accounting, TraceJsonHasOneEventPerPhaseThatTookTimeNestedInItsStepAValidationSpanAndTracksOfOtherThreads) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/run";
  const json s = short_run(dir, {"--slow-callback-ms", "1", "--workers", "2", "--checkpoint-every", "10"});
  const json trace = json::parse(read_file(dir + "/trace.json"));
  std::map<std::pair<int64_t, int64_t>, std::pair<double, double>> steps;  // (epoch,batch) -> [ts, end]
  std::map<std::pair<int64_t, int64_t>, int> phases;
  std::vector<json> phase_events;
  std::vector<int64_t> validations;
  std::map<int64_t, std::string> threads;     // tid -> name (metadata comes first)
  std::map<std::string, int64_t> on_thread;  // events per other thread
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") == "M" && e.at("name") == "thread_name") {
      threads[e.at("tid").get<int64_t>()] = e.at("args").at("name").get<std::string>();
    }
    if (e.at("ph") != "X" || e.at("cat") == "callback") continue;
    EXPECT_EQ(e.at("pid").get<int64_t>(), 0);
    if (e.at("cat") == "thread") {
      ++on_thread[threads.at(e.at("tid").get<int64_t>())];
      continue;
    }
    EXPECT_EQ(e.at("tid").get<int64_t>(), 1);
    EXPECT_GT(e.at("dur").get<double>(), 0) << e.dump();
    if (e.at("cat") == "validation") {
      validations.push_back(e.at("args").at("epoch").get<int64_t>());
      continue;
    }
    // one CPU process: no copy to a device, no communication
    EXPECT_NE(e.at("name"), "h2d");
    EXPECT_NE(e.at("name"), "comm");
    const auto key = std::make_pair(e.at("args").at("epoch").get<int64_t>(), e.at("args").at("batch").get<int64_t>());
    const double ts = e.at("ts").get<double>(), end = ts + e.at("dur").get<double>();
    if (e.at("name") == "step") {
      steps[key] = {ts, end};
    } else {
      ++phases[key];
      phase_events.push_back(e);
    }
  }
  EXPECT_EQ(static_cast<int64_t>(steps.size()), s.at("steps").get<int64_t>());
  for (const auto& [key, count] : phases) EXPECT_LE(count, 8) << key.second;
  EXPECT_EQ(validations, (std::vector<int64_t>{0}));
  // every batch built by one of the two loader workers; a backup every 10 steps by the writer's thread
  EXPECT_EQ(on_thread["loader worker 1"] + on_thread["loader worker 2"], s.at("steps").get<int64_t>()) << trace.dump();
  EXPECT_GE(on_thread["checkpoint writer"], 1);
  for (const auto& e : phase_events) {
    const auto key = std::make_pair(e.at("args").at("epoch").get<int64_t>(), e.at("args").at("batch").get<int64_t>());
    const auto [step_ts, step_end] = steps.at(key);
    const double ts = e.at("ts").get<double>(), end = ts + e.at("dur").get<double>();
    EXPECT_GE(ts + 1e-3, step_ts);
    EXPECT_LE(end, step_end + 1e-3);
  }
  double previous_end = -1;
  for (const auto& [key, span] : steps) {  // (epoch, batch) order is time order
    EXPECT_GE(span.first + 1e-3, previous_end);
    previous_end = span.second;
  }
}

TEST(SweepCommand, WritesOneRowPerBatchSizeAndAKneeAmongThem) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/sweep";
  const ProcessResult r = run_fitscope({"sweep", "--model", "mlp", "--batch-sizes", "8,32,128", "--steps", "10",
                                        "--windows", "3", "--window-seconds", "0.001", "--synthetic-size", "1000",
                                        "--threads", "1", "--layer-probe-every", "3", "--run-dir", dir});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json sweep = json::parse(read_file(dir + "/sweep.json"));
  std::vector<int64_t> sizes;
  for (const auto& row : sweep.at("rows")) {
    sizes.push_back(row.at("batch_size").get<int64_t>());
    EXPECT_GT(row.at("samples_per_s_low").get<double>(), 0.0);
    EXPECT_LE(row.at("samples_per_s_low").get<double>(), row.at("samples_per_s").get<double>());
    EXPECT_LE(row.at("samples_per_s").get<double>(), row.at("samples_per_s_high").get<double>());
    EXPECT_EQ(row.at("windows").size(), 3u);
    EXPECT_GE(row.at("steps").get<int64_t>(), 3 * 10);  // every window holds its 10 steps, the probed ones not counted
    EXPECT_LE(row.at("step_ms_p50").get<double>(), row.at("step_ms_p99").get<double>());
  }
  EXPECT_EQ(sweep.at("method"), json::parse(R"({"windows": 3, "window_seconds": 0.001, "window_steps": 10})"));
  // the batch sizes take turns: one line per round, each naming every batch size
  for (const char* round : {"window 1:  8: ", "window 2:  8: ", "window 3:  8: "}) {
    EXPECT_NE(r.out.find(round), std::string::npos) << r.out;
  }
  EXPECT_TRUE(sweep.at("knee").at("resolved").is_boolean());
  EXPECT_EQ(sizes, (std::vector<int64_t>{8, 32, 128}));
  const int64_t knee = sweep.at("knee_batch_size").get<int64_t>();
  EXPECT_TRUE(knee == 8 || knee == 32 || knee == 128) << knee;
  EXPECT_TRUE(sweep.at("fit").contains("fixed_ms"));
  EXPECT_EQ(lines_of(read_file(dir + "/sweep.csv")).size(), 4u);
  EXPECT_NE(r.out.find("<- knee"), std::string::npos) << r.out;
}

/// Under --threads auto the threads are chosen once, by the middle batch size's search, and held: the
/// curve is the batch size's, not the thread choice's.
TEST(SweepCommand, HoldsTheThreadsOneSearchChoseForEveryBatchSize) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/sweep";
  const ProcessResult r = run_fitscope({"sweep", "--model", "mlp", "--batch-sizes", "8,32,128", "--steps", "10",
                                        "--windows", "2", "--window-seconds", "0.02", "--synthetic-size", "1000",
                                        "--run-dir", dir});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("chosen by batch size 32's search and held for every batch size"), std::string::npos) << r.out;
  std::set<std::string> threads;
  const json sweep = json::parse(read_file(dir + "/sweep.json"));
  for (const auto& row : sweep.at("rows")) threads.insert(row.at("threads").get<std::string>());
  ASSERT_EQ(threads.size(), 1u);
  EXPECT_NE(threads.begin()->find(" auto, held"), std::string::npos) << *threads.begin();
}

/// With a memory budget the seed CNN's sweep counts each batch size's memory, predicts from the curve
/// the largest batch size within the budget, checks it by one run, and names the fastest within it.
TEST(SweepCommand, AMemoryBudgetPicksTheFastestBatchSizeWithinIt) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/sweep";
  const ProcessResult r = run_fitscope({"sweep", "--model", "cnn", "--batch-sizes", "8,32,128", "--steps", "5",
                                        "--windows", "1", "--window-seconds", "0.02", "--synthetic-size", "2000",
                                        "--threads", "1", "--memory-budget", "12M", "--run-dir", dir});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json sweep = json::parse(read_file(dir + "/sweep.json"));
  const json& budget = sweep.at("memory_budget");
  ASSERT_TRUE(budget.is_object()) << sweep.dump();
  const int64_t chosen = budget.at("chosen_batch_size").get<int64_t>();
  double best = 0;
  int64_t fastest = 0;
  for (const auto& row : sweep.at("rows")) {
    EXPECT_GT(row.at("memory_mb").get<double>(), 0) << row.dump();
    if (row.at("memory_mb").get<double>() <= 12.0 * (1 << 20) * 1e-6 && row.at("samples_per_s").get<double>() > best) {
      best = row.at("samples_per_s").get<double>();
      fastest = row.at("batch_size").get<int64_t>();
    }
  }
  EXPECT_EQ(chosen, fastest);
  EXPECT_GT(chosen, 0);
  EXPECT_TRUE(sweep.at("memory_curve").is_object());
  EXPECT_NE(r.out.find("Memory: memory budget 12.6 MB (the steps' tensors): the curve "), std::string::npos) << r.out;
}

TEST(SweepCommand, BadBatchSizesExitTwoNamingTheFlag) {
  expect_usage_error({"sweep", "--batch-sizes", "16,0,64"}, "--batch-sizes: expected an integer in [1, 1000000], got '0'");
  expect_usage_error({"sweep", "--batch-sizes", "16,abc"}, "--batch-sizes");
  expect_usage_error({"sweep", "--windows", "0"}, "--windows: expected an integer in [1, 1000], got '0'");
  expect_usage_error({"sweep", "--window-seconds", "0"}, "--window-seconds: expected a number of seconds in [0.001, 3600], got '0'");
  expect_usage_error({"train", "--callback-mode", "threads"}, "--callback-mode: threads not in {sync,async}");
  expect_usage_error({"train", "--load-delay-ms", "-5"}, "--load-delay-ms: expected a number of milliseconds in [0, 3600000], got '-5'");
}

/// A cosine schedule with warm-up shows in the logged rate; EarlyStopping stops a run that does not
/// improve (a rate so small the weights stay put: the validation loss repeats exactly).
TEST(TrainCommand, AScheduleSetsTheRateAndEarlyStoppingEndsARunThatStopsImproving) {
  TempDir tmp;
  const std::string scheduled = tmp.path() + "/scheduled";
  const ProcessResult r = run_fitscope({"train", "--model", "mlp", "--synthetic-size", "1000", "--epochs", "4",
                                        "--lr-schedule", "cosine", "--lr-warmup", "5", "--verbose", "2", "--run-dir", scheduled});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto rows = lines_of(read_file(scheduled + "/metrics.csv"));
  ASSERT_EQ(rows.size(), 5u);
  const auto header = rows[0];
  const std::size_t column = std::count(header.begin(), header.begin() + static_cast<std::ptrdiff_t>(header.find("learning_rate")), ',');
  std::vector<double> rates;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    std::istringstream cells(rows[i]);
    std::string cell;
    for (std::size_t c = 0; c <= column; ++c) std::getline(cells, cell, ',');
    rates.push_back(std::stod(cell));
  }
  // falling after the warm-up, to 0 at the run's last step's end
  EXPECT_GT(rates[0], rates[1]);
  EXPECT_GT(rates[2], rates[3]);
  EXPECT_LT(rates[3], 0.001 * 0.01);
  EXPECT_EQ(json::parse(read_file(scheduled + "/summary.json")).at("settings").at("lr_schedule"), "cosine per step");

  const std::string stopped = tmp.path() + "/stopped";
  const ProcessResult s = run_fitscope({"train", "--model", "mlp", "--synthetic-size", "1000", "--epochs", "10",
                                        "--lr", "1e-30", "--early-stopping", "1", "--verbose", "2", "--run-dir", stopped});
  ASSERT_EQ(s.exit_code, 0) << s.err;
  EXPECT_EQ(lines_of(read_file(stopped + "/metrics.csv")).size(), 3u);  // epoch 2 did not improve on epoch 1
}

/// The run's length and its validation from the command line.
TEST(TrainCommand, StepsPerEpochMaxStepsValidationDataAndFrequencyShapeTheRun) {
  TempDir tmp;
  const std::string capped = tmp.path() + "/capped";
  // 800 training examples: 25 batches an epoch; 30 batches in all stop inside the second epoch
  ASSERT_EQ(run_fitscope({"train", "--model", "mlp", "--synthetic-size", "1000", "--epochs", "5", "--max-steps", "30",
                          "--warmup-steps", "0", "--threads", "1", "--verbose", "2", "--run-dir", capped})
                .exit_code,
            0);
  EXPECT_EQ(lines_of(read_file(capped + "/steps.csv")).size(), 31u);
  EXPECT_EQ(lines_of(read_file(capped + "/metrics.csv")).size(), 3u);
  EXPECT_TRUE(std::filesystem::exists(capped + "/model.weights.pt"));

  const std::string shaped = tmp.path() + "/shaped";
  ASSERT_EQ(run_fitscope({"train", "--model", "mlp", "--synthetic-size", "1000", "--epochs", "2", "--steps-per-epoch", "5",
                          "--validation-split", "0", "--validation-data", "synthetic", "--validation-freq", "2",
                          "--no-shuffle", "--threads", "1", "--verbose", "2", "--run-dir", shaped})
                .exit_code,
            0);
  EXPECT_EQ(lines_of(read_file(shaped + "/steps.csv")).size(), 11u);
  const auto rows = lines_of(read_file(shaped + "/metrics.csv"));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_NE(rows[0].find("val_loss"), std::string::npos) << rows[0];  // the separate set validates...
  EXPECT_NE(rows[1].find("NA"), std::string::npos) << rows[1];          // ...at epoch 2 only
  EXPECT_EQ(rows[2].find("NA"), std::string::npos) << rows[2];
  const auto settings = json::parse(read_file(shaped + "/summary.json")).at("settings");
  EXPECT_EQ(settings.at("shuffle"), "false");
}

/// --quiet (--verbose 0) prints nothing but errors: no progress, no report, no warnings (summary.json
/// keeps them); --verbose 2 prints one line per epoch and the report.
TEST(TrainCommand, QuietPrintsNothingButErrorsAndVerboseTwoOneLinePerEpoch) {
  TempDir tmp;
  // validating every 2nd epoch, the best checkpoint lacks val_loss at epoch 1: a warning
  const ProcessResult quiet = run_fitscope({"train", "--model", "mlp", "--synthetic-size", "1000", "--epochs", "2",
                                            "--validation-freq", "2", "--quiet", "--run-dir", tmp.path() + "/quiet"});
  ASSERT_EQ(quiet.exit_code, 0) << quiet.err;
  EXPECT_EQ(quiet.out, "");
  EXPECT_EQ(quiet.err, "");
  const auto warnings = json::parse(read_file(tmp.path() + "/quiet/summary.json")).at("warnings");
  ASSERT_FALSE(warnings.empty());
  EXPECT_NE(warnings[0].get<std::string>().find("ModelCheckpoint"), std::string::npos) << warnings;

  const ProcessResult lines = run_fitscope({"train", "--model", "mlp", "--synthetic-size", "1000", "--epochs", "2",
                                            "--verbose", "2", "--run-dir", tmp.path() + "/lines"});
  ASSERT_EQ(lines.exit_code, 0) << lines.err;
  EXPECT_NE(lines.out.find("Epoch 2/2\n25/25 - "), std::string::npos) << lines.out;
  EXPECT_EQ(lines.out.find('\r'), std::string::npos);
  EXPECT_NE(lines.out.find("Report: "), std::string::npos);
  expect_usage_error({"train", "--verbose", "3"}, "--verbose: expected an integer in [0, 2], got '3'");
}

TEST(TrainCommand, ChosenMetricsAppearInTheLogsWithValidationTwins) {
  TempDir tmp;
  const json s = short_run(tmp.path() + "/run", {"--metrics", "accuracy,precision,recall,f1,auc,top_3_accuracy,mae"});
  for (const char* key : {"accuracy", "precision", "recall", "f1", "auc", "top_3_accuracy", "mean_absolute_error"}) {
    EXPECT_TRUE(s.at("logs").contains(key)) << key;
    EXPECT_TRUE(s.at("logs").contains(std::string("val_") + key)) << key;
  }
  expect_usage_error({"train", "--metrics", "accuracy,f7"}, "--metrics: unknown metric 'f7'");
}

namespace {

std::string be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
}

/// An MNIST-style pair `prefix`-images/labels in `dir`: n images of 28x28 whose bright column is the label.
void write_idx_pair(const std::string& dir, const std::string& prefix, uint32_t n) {
  std::string images{0, 0, 8, 3}, labels{0, 0, 8, 1};
  images += be32(n) + be32(28) + be32(28);
  labels += be32(n);
  for (uint32_t i = 0; i < n; ++i) {
    const int label = static_cast<int>(i % 10);
    labels += static_cast<char>(label);
    for (int y = 0; y < 28; ++y) {
      for (int x = 0; x < 28; ++x) images += static_cast<char>(x == 4 + 2 * label ? 250 : (x * 7 + y * 3 + i) % 40);
    }
  }
  std::ofstream(dir + "/" + prefix + "-images-idx3-ubyte", std::ios::binary) << images;
  std::ofstream(dir + "/" + prefix + "-labels-idx1-ubyte", std::ios::binary) << labels;
}

}  // namespace

TEST(DataCommand, TrainsOnAnIdxPairWrittenByTheTestAndValidatesOnItsTestSet) {
  TempDir tmp;
  write_idx_pair(tmp.path(), "train", 600);
  write_idx_pair(tmp.path(), "t10k", 100);
  const std::string dir = tmp.path() + "/run";
  const ProcessResult r = run_fitscope({"train", "--data", "idx:" + tmp.path(), "--epochs", "2", "--run-dir", dir,
                                        "--verbose", "2", "--workers", "2", "--prefetch", "4", "--augment", "brightness"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json s = check_run_directory(dir);
  EXPECT_GT(s.at("logs").at("val_accuracy").get<double>(), 0.9);  // the bright column gives the class away
  EXPECT_EQ(s.at("loader").at("workers"), 2);
  EXPECT_EQ(s.at("loader").at("prefetch"), 4);
  EXPECT_EQ(s.at("loader").at("auto").at("workers"), false);
  EXPECT_EQ(s.at("loader").at("batches"), 2 * 19);  // 600 examples, batches of 32, two epochs
  EXPECT_GE(s.at("loader").at("mean_queue_depth").get<double>(), 0.0);
  EXPECT_EQ(s.at("steps"), 2 * 19);
}

TEST(DataCommand, ACorruptIdxFileExitsTwoNamingTheFileAndOffset) {
  TempDir tmp;
  write_idx_pair(tmp.path(), "train", 50);
  const std::string images = tmp.path() + "/train-images-idx3-ubyte";
  const std::string bytes = read_file(images);
  std::ofstream(images, std::ios::binary) << bytes.substr(0, bytes.size() - 100);
  expect_usage_error({"train", "--data", "idx:" + tmp.path(), "--run-dir", tmp.path() + "/run"},
                     "--data idx:" + tmp.path() + ": " + images +
                         ": at byte offset 39116: truncated: the dimensions need 39200 bytes of data after the header, found 39100");
  EXPECT_FALSE(std::filesystem::exists(tmp.path() + "/run"));
}

TEST(DataCommand, CsvTrainsTheMlpAndTheCnnIsRefusedWithTheShape) {
  TempDir tmp;
  const std::string csv = tmp.path() + "/points.csv";
  {
    std::ofstream out(csv);
    out << "x,y,label\n";
    for (int i = 0; i < 400; ++i) {
      const double x = (i * 37 % 100) / 50.0 - 1, y = (i * 61 % 100) / 50.0 - 1;
      out << x << "," << y << "," << (x + y > 0 ? 1 : 0) << "\n";
    }
  }
  const std::string dir = tmp.path() + "/run";
  const ProcessResult r = run_fitscope({"train", "--data", "csv:" + csv, "--model", "mlp", "--epochs", "5", "--lr",
                                        "0.05", "--run-dir", dir, "--verbose", "2", "--workers", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GT(check_run_directory(dir).at("logs").at("val_accuracy").get<double>(), 0.8);
  expect_usage_error({"train", "--data", "csv:" + csv, "--run-dir", dir},
                     "--model cnn needs square images [channels x size x size] but --data csv:" + csv +
                         " gives examples of shape [2] (use --model mlp)");
  std::ofstream(csv, std::ios::app) << "1,2\n";
  expect_usage_error({"train", "--data", "csv:" + csv, "--model", "mlp"},
                     csv + ": line 402: found 2 fields, expected 3 like the first line (ragged row)");
  std::ofstream(csv, std::ios::trunc) << "x,y,label\n0.5,0.5,1\n";
  expect_usage_error({"train", "--data", "csv:" + csv, "--model", "mlp", "--run-dir", tmp.path() + "/one"},
                     "csv:" + csv + ": a validation split of 0.2 of its 1 example leaves no example to validate on");
}

TEST(DataCommand, TrainsTheSeedCnnOnAGeneratedJpegFolderAboveNinetyFivePercent) {
#ifdef FITSCOPE_SANITIZED
  GTEST_SKIP() << "a training judged by its accuracy: run in the plain build (the sanitizers check the image "
                  "folder's decoding in the shorter tests)";
#endif
  TempDir tmp;
  const std::string images = tmp.path() + "/images", dir = tmp.path() + "/run";
  const ProcessResult made = run_fitscope({"make-images", images, "--count", "4000", "--size", "64"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  EXPECT_EQ(made.out, "Wrote 4000 64x64 jpg images in 10 class folders under " + images + "\n");
  EXPECT_TRUE(std::filesystem::is_directory(images + "/class_09"));
  const ProcessResult r = run_fitscope({"train", "--data", "images:" + images, "--epochs", "2", "--workers", "2",
                                        "--run-dir", dir, "--verbose", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json summary = check_run_directory(dir);
  EXPECT_GE(summary.at("logs").at("val_accuracy").get<double>(), 0.95);
  EXPECT_EQ(summary.at("settings").at("data").get<std::string>(), "images:" + images);
}

TEST(DataCommand, ABadImageExitsTwoNamingTheFileAndSkipBadFilesGoesOnWithAWarning) {
  TempDir tmp;
  const std::string images = tmp.path() + "/images";
  ASSERT_EQ(run_fitscope({"make-images", images, "--count", "200", "--size", "16", "--format", "png", "--channels", "1"}).exit_code, 0);
  { std::ofstream(images + "/class_03/broken.png") << "\x89PNG\r\n\x1a\n but nothing more"; }
  expect_usage_error({"train", "--data", "images:" + images, "--epochs", "1", "--model", "mlp"},
                     "--data images:" + images + ": image folder " + images + ": " + images + "/class_03/broken.png: PNG header");
  const ProcessResult r = run_fitscope({"train", "--data", "images:" + images, "--epochs", "1", "--model", "mlp",
                                        "--skip-bad-files", "--normalize", "0.5/0.25", "--augment", "crop", "--cache-budget", "1M",
                                        "--run-dir", tmp.path() + "/run", "--verbose", "2"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::string config = read_file(tmp.path() + "/run/config.toml");
  for (const char* line : {"\nnormalize = \"0.5/0.25\"\n", "\naugment = \"crop\"\n", "\nskip-bad-files = true\n",
                           "\ncache-budget = \"1M\"\n"}) {
    EXPECT_NE(config.find(line), std::string::npos) << line;
  }
  EXPECT_NE(r.err.find("fitscope: warning: --data images:" + images + ": 1 bad files or empty class folders left out "
                       "(--skip-bad-files), the first: " + images + "/class_03/broken.png: "),
            std::string::npos) << r.err;
  expect_usage_error({"train", "--data", "images:" + tmp.path() + "/none"}, "image folder " + tmp.path() + "/none: not a directory");
  expect_usage_error({"make-images", tmp.path() + "/x", "--format", "gif"}, "--format: gif not in {jpg,png}");
  const std::string file = tmp.path() + "/a-file";
  std::ofstream(file) << "in the way\n";
  expect_usage_error({"make-images", file, "--count", "10"}, file + ": a file, not a folder (expected a folder to write the images into)");
  expect_usage_error({"make-images", file + "/sub", "--count", "10", "--layout", "tar", "--shards", "2"},
                     file + "/sub: " + file + " is a file, not a folder");
  expect_usage_error({"train", "--cache-budget", "12Q"}, "--cache-budget: expected a size in bytes such as 1048576, 512M or 2G, got '12Q'");
}

TEST(DataCommand, MakeImagesWritesTfRecordAndTarShardsAndRefusesShardFlagsItCannotUse) {
  TempDir tmp;
  const std::string records = tmp.path() + "/records", tars = tmp.path() + "/tars", none = tmp.path() + "/none";
  const auto names_in = [](const std::string& dir) {
    std::set<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) names.insert(entry.path().filename().string());
    return names;
  };
  const ProcessResult made = run_fitscope({"make-images", records, "--count", "40", "--size", "16", "--layout", "tfrecord", "--shards", "4"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  EXPECT_EQ(made.out.rfind("Wrote 40 16x16 jpg images in 10 classes as 4 TFRecord shards under " + records +
                               ": train-00000-of-00004.tfrecord to train-00003-of-00004.tfrecord, 10 images each, ", 0), 0u) << made.out;
  EXPECT_EQ(names_in(records), (std::set<std::string>{"train-00000-of-00004.tfrecord", "train-00001-of-00004.tfrecord",
                                                       "train-00002-of-00004.tfrecord", "train-00003-of-00004.tfrecord"}));
  const ProcessResult packed = run_fitscope({"make-images", tars, "--count", "5", "--size", "16", "--layout", "tar", "--shards", "2"});
  ASSERT_EQ(packed.exit_code, 0) << packed.err;
  EXPECT_NE(packed.out.find("as 2 WebDataset tar shards under " + tars + ": shard-00000.tar to shard-00001.tar, 2 to 3 images each"),
            std::string::npos) << packed.out;
  EXPECT_EQ(names_in(tars), (std::set<std::string>{"shard-00000.tar", "shard-00001.tar"}));

  expect_usage_error({"make-images", none, "--layout", "tfrecord", "--shards", "0"}, "--shards: expected an integer in [1, 100000000], got '0'");
  expect_usage_error({"make-images", none, "--layout", "nope"}, "--layout: nope not in {folder,tfrecord,tar}");
  expect_usage_error({"make-images", none, "--shards", "2"}, "--shards 2: expected --layout tfrecord or tar (a folder is not sharded)");
  expect_usage_error({"make-images", none, "--gzip"}, "--gzip: expected --layout tfrecord");
  expect_usage_error({"make-images", none, "--layout", "tar", "--gzip"}, "--gzip: expected --layout tfrecord (tar shards are written plain)");
  expect_usage_error({"make-images", none, "--layout", "tar", "--count", "3", "--shards", "4"},
                     "--shards 4: expected at most --count (3) so that every shard holds an image");
  EXPECT_FALSE(std::filesystem::exists(none));
  // a folder holding another shard set; sizes whose drawing would not fit memory
  expect_usage_error({"make-images", records, "--count", "40", "--size", "16", "--layout", "tfrecord", "--shards", "2"},
                     records + ": holds 4 shard files of another set (train-00000-of-00004.tfrecord, ...)");
  expect_usage_error({"make-images", none, "--count", "2", "--size", "16384,16384"},
                     "--size must be in [8, 4096] (each image is drawn as float pixels in memory), got 16384x16384");
  EXPECT_EQ(names_in(records).size(), 4u);
  EXPECT_FALSE(std::filesystem::exists(none));
}

TEST(Cli, SaysItsVersionAndPrintsItsUsageWhenCalledBare) {
  const ProcessResult flag = run_fitscope({"--version"}), word = run_fitscope({"version"}), bare = run_fitscope({});
  EXPECT_EQ(flag.exit_code, 0) << flag.err;
  EXPECT_EQ(flag.out.rfind("fitscope 0.", 0), 0u) << flag.out;
  EXPECT_EQ(word.out, flag.out);
  EXPECT_EQ(bare.exit_code, 0) << bare.err;
  for (const char* command : {"train", "evaluate", "predict", "report", "launch", "sweep"}) {
    EXPECT_NE(bare.out.find(command), std::string::npos) << command << " in\n" << bare.out;
  }
}

TEST(Cli, ReportOfAMissingDirectoryPrintsOnlyItsError) {
  TempDir tmp;
  const ProcessResult r = run_fitscope({"report", tmp.path() + "/missing"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
}

TEST(Cli, ASeedOutOfRangeOrAConfigThatIsNoFileExitsTwo) {
  TempDir tmp;
  expect_usage_error({"train", "--seed", "-1"}, "--seed: expected an integer in [0, 9223372036854775807], got '-1'");
  expect_usage_error({"train", "--seed", "18446744073709551617"}, "--seed: expected an integer in [0, 9223372036854775807]");
  for (const std::string& config : {tmp.path(), std::string("/dev/zero")}) {
    expect_usage_error({"train", "--config", config},
                       "--config " + config + ": not a regular file of at most 1 MiB (expected a TOML file of flags)");
  }
}

TEST(ProgressBarOnATerminal, TheEpochsFinalLineIsWholeAtEightyColumnsAsKerasAndThePrintoutFitsThem) {
  // the CLI in a pseudo-terminal of 80 columns, as a user's shell
  winsize size{};
  size.ws_col = 80;
  size.ws_row = 24;
  int master = -1;
  const pid_t pid = ::forkpty(&master, nullptr, nullptr, &size);
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::execl(FITSCOPE_CLI, FITSCOPE_CLI, "train", "--model", "mlp", "--synthetic-size", "600", "--epochs", "1", "--threads",
            "1", "--run-dir", (std::filesystem::temp_directory_path() / ("fitscope-pty-" + std::to_string(::getpid()))).c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  std::string text;
  char buffer[4096];
  for (ssize_t n; (n = ::read(master, buffer, sizeof buffer)) > 0;) text.append(buffer, static_cast<std::size_t>(n));
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::close(master);
  std::filesystem::remove_all(std::filesystem::temp_directory_path() / ("fitscope-pty-" + std::to_string(pid)));
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << text;
  // the last line the bar drew: all of its metrics, validation's included, though longer than 80
  const std::size_t end = text.find("\033[K\r\n");
  ASSERT_NE(end, std::string::npos) << text;
  const std::string line = text.substr(text.rfind('\r', end - 1) + 1, end - text.rfind('\r', end - 1) - 1);
  EXPECT_GT(line.size(), 80u) << line;
  for (const char* key : {" - accuracy: ", " - loss: ", " - val_accuracy: ", " - val_loss: "}) {
    EXPECT_NE(line.find(key), std::string::npos) << key << " in " << line;
  }
  // the end-of-run printout fits the 80 columns, its sentences wrapped at words
  const std::string printout = text.substr(end + 5);
  ASSERT_NE(printout.find("Verdict: "), std::string::npos) << printout;
  ASSERT_NE(printout.find("Run directory: "), std::string::npos) << printout;
  std::size_t lines = 0;
  for (std::size_t from = 0; from < printout.size();) {
    const std::size_t to = std::min(printout.find("\r\n", from), printout.size());
    std::size_t columns = 0;
    for (std::size_t i = from; i < to; ++i) columns += (static_cast<unsigned char>(printout[i]) & 0xC0) != 0x80;
    EXPECT_LE(columns, 80u) << printout.substr(from, to - from);
    ++lines;
    from = to + 2;
  }
  EXPECT_GT(lines, 10u) << printout;
}

TEST(Cli, ItsBashCompletionIsMadeFromItsFlagTableAndCompletesCommandsAndFlags) {
  TempDir tmp;
  const ProcessResult script = run_fitscope({"completion", "bash"});
  ASSERT_EQ(script.exit_code, 0) << script.err;
  std::ofstream(tmp.path() + "/fitscope.bash") << script.out;
  const auto complete = [&](const std::string& words, int cword) {
    const ProcessResult r = run_process({"/bin/bash", "-c", "source '" + tmp.path() + "/fitscope.bash'; COMP_WORDS=(" + words +
                                                                "); COMP_CWORD=" + std::to_string(cword) + "; _fitscope; echo \"${COMPREPLY[*]}\""});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  };
  EXPECT_EQ(complete("fitscope tr", 1), "train\n");
  EXPECT_EQ(complete("fitscope train --epo", 2), "--epochs\n");
  EXPECT_EQ(complete("fitscope evaluate run --wei", 3), "--weights\n");
  EXPECT_EQ(complete("fitscope train --max-image-", 2), "--max-image-pixels\n");  // every flag, the newest too
  // the installed build has it beside the CLI
  EXPECT_EQ(read_file(std::filesystem::path(FITSCOPE_CLI).parent_path().string() + "/fitscope.bash"), script.out);
}

TEST(TrainCommand, AThirteenStepRunIsTooShortToJudgeAndSaysSo) {
  TempDir tmp;
  const ProcessResult r = run_fitscope({"train", "--model", "mlp", "--synthetic-size", "500", "--epochs", "1", "--verbose", "2",
                                        "--run-dir", tmp.path() + "/run"});  // 400 training examples: 13 steps of 32
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Verdict: too short to judge ("), std::string::npos) << r.out;
  EXPECT_EQ(nlohmann::json::parse(read_file(tmp.path() + "/run/summary.json")).at("verdict").at("level"), "unjudged");
}
