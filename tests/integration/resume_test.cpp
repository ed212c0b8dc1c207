// A real `fitscope train` killed with SIGKILL, during training and during a checkpoint write, or
// stopped by SIGINT or SIGTERM, then resumed with --resume: its final weights equal an uninterrupted
// run's, bit for bit.

#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <nlohmann/json.hpp>

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "fitscope/checkpoint/checkpoint_file.hpp"
#include "fitscope/checkpoint/training_state.hpp"
#include "fitscope/checkpoint/checkpoint_writer.hpp"
#include "fitscope/summary/run_summary.hpp"
#include "killed_runs.hpp"
#include "process.hpp"

using fitscope::testing::expect_same_weights;
using fitscope::testing::kill_once_backed_up;
using fitscope::testing::ProcessResult;
using fitscope::testing::shell_words;
using fitscope::testing::read_file;
using fitscope::testing::run_process;
using fitscope::testing::TempDir;

namespace {

const std::vector<std::string> kTrain = {FITSCOPE_CLI, "train", "--model", "mlp", "--synthetic-size", "3200",
                                         "--epochs", "25", "--workers", "0", "--threads", "1", "--verbose", "2",
                                         "--checkpoint-every", "20", "--seed", "4"};

std::vector<std::string> train_into(const std::string& dir, std::vector<std::string> extra = {},
                                    const std::string& model = "mlp") {
  std::vector<std::string> args = kTrain;
  args[3] = model;
  args.insert(args.end(), {"--run-dir", dir});
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

}  // namespace

TEST(Resume, AKilledRunResumesMidEpochAndEndsWithTheUninterruptedWeights) {
  TempDir tmp;
  const std::string whole = tmp.path() + "/whole", killed = tmp.path() + "/killed";
  const ProcessResult reference = run_process(train_into(whole));
  ASSERT_EQ(reference.exit_code, 0) << reference.err;

  // SIGKILLed once it has a backup of step 100 or later (epoch 1 on)
  const ProcessResult kill = kill_once_backed_up(train_into(killed), killed, 100);
  ASSERT_EQ(kill.exit_code, 0) << "the run ended before it could be killed: " << kill.err;
  EXPECT_EQ(kill.out, "status=137\n");
  EXPECT_FALSE(std::filesystem::exists(killed + "/model.weights.pt"));

  const ProcessResult refused = run_process(train_into(killed));
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("pass --resume to continue it"), std::string::npos) << refused.err;

  const ProcessResult resumed = run_process(train_into(killed, {"--resume"}));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.out.find("Resumed from epoch "), std::string::npos) << resumed.out;
  expect_same_weights(whole, killed);
  // metrics.csv continues: epoch 0's row, written before the kill, is kept, and no epoch twice
  EXPECT_EQ(read_file(killed + "/metrics.csv"), read_file(whole + "/metrics.csv"));
}

namespace {

/// Killed inside the third backup write (each backup of the seed MLP with Adam is ~95 kB), resumed,
/// compared with an uninterrupted run.
void kill_mid_write_and_resume(const std::string& model) {
  TempDir tmp;
  const std::string whole = tmp.path() + "/whole", killed = tmp.path() + "/killed";
  ASSERT_EQ(run_process(train_into(whole, {}, model)).exit_code, 0);
  const std::string script = "FITSCOPE_TEST_KILL_AFTER_CHECKPOINT_BYTES=250000 " +
                             shell_words(train_into(killed, {}, model)) + "> /dev/null 2>&1; echo status=$?";
  const ProcessResult kill = run_process({"/bin/sh", "-c", script});
  EXPECT_EQ(kill.out, "status=137\n") << kill.err;
  bool torn = false;  // the write it died in
  for (const auto& entry : std::filesystem::directory_iterator(killed + "/backup")) {
    torn = torn || entry.path().filename().string().rfind("ckpt-000000000060.fitscope.tmp", 0) == 0;
  }
  EXPECT_TRUE(torn);
  const ProcessResult resumed = run_process(train_into(killed, {"--resume"}, model));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.out.find("Resumed from epoch "), std::string::npos) << resumed.out;
  EXPECT_NE(resumed.out.find(", step 40 ("), std::string::npos) << resumed.out;
  expect_same_weights(whole, killed);
}

/// Rewrites a backup as a hostile or buggy writer could: well framed, checksums right, epoch -5.
void craft_negative_epoch(const std::string& path) {
  fitscope::TrainingState state = fitscope::decode_state(fitscope::unframe_checkpoint(read_file(path), path), path);
  state.epoch = -5;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << fitscope::frame_checkpoint(fitscope::encode_state(state));
}

/// Killed inside its third backup (each ~95 kB): backups of steps 20 and 40 are left.
ProcessResult train_killed_in_third_backup(const std::string& dir, std::vector<std::string> extra = {}) {
  return run_process({"/bin/sh", "-c", "FITSCOPE_TEST_KILL_AFTER_CHECKPOINT_BYTES=250000 " + shell_words(train_into(dir, extra)) +
                                           "> /dev/null 2>&1; echo status=$?"});
}

std::string ckpt(const std::string& dir, int step) {
  char name[64];
  std::snprintf(name, sizeof name, "/backup/ckpt-%012d.fitscope", step);
  return dir + name;
}

}  // namespace

/// A crafted newest backup is set aside (backup/corrupt/), the resume falls back to the one before, and
/// retention with --keep 1 keeps the new backups (it used to keep the crafted file, newest by name, and
/// delete each new backup as it was written): a second kill resumes from a new backup, not from scratch.
TEST(Resume, ACraftedNewestBackupIsSetAsideAndRetentionKeepsTheNewBackups) {
  TempDir tmp;
  const std::string whole = tmp.path() + "/whole", killed = tmp.path() + "/killed";
  ASSERT_EQ(run_process(train_into(whole)).exit_code, 0);
  ASSERT_EQ(train_killed_in_third_backup(killed).out, "status=137\n");
  craft_negative_epoch(ckpt(killed, 40));
  const ProcessResult second = run_process({"/bin/sh", "-c", "FITSCOPE_TEST_KILL_AFTER_CHECKPOINT_BYTES=250000 " +
                                                                 shell_words(train_into(killed, {"--resume", "--keep", "1"})) +
                                                                 "> /dev/null 2> " + tmp.path() + "/err; echo status=$?"});
  EXPECT_EQ(second.out, "status=137\n");
  const std::string err = read_file(tmp.path() + "/err");
  EXPECT_NE(err.find(ckpt(killed, 40) + ": field epoch is -5, expected >= 0"), std::string::npos) << err;
  EXPECT_NE(err.find("moved to " + killed + "/backup/corrupt"), std::string::npos) << err;
  EXPECT_TRUE(std::filesystem::exists(killed + "/backup/corrupt/ckpt-000000000040.fitscope"));
  EXPECT_TRUE(std::filesystem::exists(ckpt(killed, 60)));  // resumed from 20, wrote 40 and 60, died inside 80
  const ProcessResult third = run_process(train_into(killed, {"--resume"}));
  ASSERT_EQ(third.exit_code, 0) << third.err;
  EXPECT_NE(third.out.find(", step 60 ("), std::string::npos) << third.out;
  expect_same_weights(whole, killed);
}

/// When no backup can be restored the resume is refused (exit 2) naming each file and why; corrupt
/// files are moved aside, never deleted; backups of another batch size are refused and left in place.
TEST(Resume, IsRefusedNamingEachBackupWhenNoneCanBeRestored) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/run";
  ASSERT_EQ(train_killed_in_third_backup(dir).out, "status=137\n");
  const ProcessResult other = run_process(train_into(dir, {"--resume", "--batch-size", "64"}));
  EXPECT_EQ(other.exit_code, 2) << other.err;
  EXPECT_NE(other.err.find(ckpt(dir, 40) + ": it was written with batch size 32, this fit has 64"), std::string::npos)
      << other.err;
  EXPECT_TRUE(std::filesystem::exists(ckpt(dir, 40)));
  EXPECT_TRUE(std::filesystem::exists(ckpt(dir, 20)));
  craft_negative_epoch(ckpt(dir, 40));
  craft_negative_epoch(ckpt(dir, 20));
  const ProcessResult refused = run_process(train_into(dir, {"--resume"}));
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(refused.err.find("no checkpoint in " + dir + "/backup could be restored: " + ckpt(dir, 40) +
                             ": field epoch is -5, expected >= 0; " + ckpt(dir, 20) + ": field epoch is -5"),
            std::string::npos)
      << refused.err;
  EXPECT_TRUE(std::filesystem::exists(dir + "/backup/corrupt/ckpt-000000000040.fitscope"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/backup/corrupt/ckpt-000000000020.fitscope"));
  const ProcessResult again = run_process(train_into(dir, {"--resume"}));
  EXPECT_EQ(again.exit_code, 2) << again.err;
  EXPECT_NE(again.err.find("--resume: no checkpoint in " + dir + "/backup"), std::string::npos) << again.err;
}

TEST(Resume, ARunKilledInTheMiddleOfACheckpointWriteResumesFromThePreviousOne) { kill_mid_write_and_resume("mlp"); }

TEST(Resume, ATorchScriptModelResumesLikeACppOne) {
  TempDir tmp;
  const std::string model = tmp.path() + "/mlp.pt";
  const ProcessResult made =
      run_process({FITSCOPE_PYTHON, std::string(FITSCOPE_SOURCE_DIR) + "/examples/python_model/make_model.py", model, "mlp"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  kill_mid_write_and_resume(model);
}

namespace {

/// Signalled once its second backup exists, a run finishes instead of being lost: exit 128 + the
/// signal, every file of the run directory written and parseable, the summary marked interrupted, a
/// backup of the step it stopped at kept; --resume continues from it and ends with the uninterrupted
/// run's weights.
void interrupt_and_resume(int signal) {
  TempDir tmp;
  const std::string whole = tmp.path() + "/whole", stopped = tmp.path() + "/stopped";
  ASSERT_EQ(run_process(train_into(whole)).exit_code, 0);
  fitscope::testing::Child child(train_into(stopped));
  ASSERT_TRUE(fitscope::testing::wait_for_file(stopped + "/backup/ckpt-000000000040.fitscope"));
  child.signal(signal);
  const ProcessResult r = child.wait();
  ASSERT_EQ(r.exit_code, 128 + signal) << r.err;

  const fitscope::RunSummary s = fitscope::RunSummary::from_json(read_file(stopped + "/summary.json"), "summary.json");
  EXPECT_TRUE(s.interrupted);
  EXPECT_GE(s.steps, 40);
  EXPECT_LT(s.steps, 2000) << "the run ended before the signal";
  const std::string metrics = read_file(stopped + "/metrics.csv");
  if (s.epochs > 0) {  // the signal came in training: the stopped epoch ended with its validation
    EXPECT_EQ(metrics.rfind("epoch,", 0), 0u) << metrics;
    EXPECT_GE(std::count(metrics.begin(), metrics.end(), '\n'), 2) << "a header and the stopped epoch's row";
  } else {  // it came in the first epoch's validation, which ended there: no epoch ended
    EXPECT_EQ(metrics, "");
  }
  const std::string steps = read_file(stopped + "/steps.csv");
  EXPECT_EQ(std::count(steps.begin(), steps.end(), '\n'), s.steps + 1) << "a header and a row per step";
  EXPECT_NO_THROW((void)nlohmann::json::parse(read_file(stopped + "/trace.json")));
  EXPECT_NE(read_file(stopped + "/report.html").find("interrupted by a signal"), std::string::npos);
  EXPECT_FALSE(read_file(stopped + "/model.weights.pt").empty());
  char backup[64];
  std::snprintf(backup, sizeof backup, "/backup/ckpt-%012lld.fitscope", static_cast<long long>(s.steps));
  EXPECT_TRUE(std::filesystem::exists(stopped + backup)) << backup;

  const ProcessResult resumed = run_process(train_into(stopped, {"--resume"}));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.out.find(", step " + std::to_string(s.steps) + " (" + stopped + "/backup/" +
                             fitscope::checkpoint_file_name(s.steps) + ")\n"),
            std::string::npos) << resumed.out;
  EXPECT_LT(resumed.out.find("Resumed from epoch "), resumed.out.find("Epoch ")) << resumed.out;  // before training goes on
  expect_same_weights(whole, stopped);
}

}  // namespace

TEST(Interrupt, SigintFinishesTheRunAndResumeContinuesFromItsBackup) { interrupt_and_resume(SIGINT); }

TEST(Interrupt, SigtermFinishesTheRunAndResumeContinuesFromItsBackup) { interrupt_and_resume(SIGTERM); }
