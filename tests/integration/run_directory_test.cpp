// Nothing the user owns is lost: --overwrite removes only what a run recorded in its manifest, a live
// run holds its directory's lock, and evaluate/predict/report never write over a run's own files and
// write through links and devices instead of replacing them. Real processes, real files.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>
#include <nlohmann/json.hpp>

#include "process.hpp"

using fitscope::testing::Child;
using fitscope::testing::expect_usage_error;
using fitscope::testing::ProcessResult;
using fitscope::testing::read_file;
using fitscope::testing::run_fitscope;
using fitscope::testing::TempDir;
namespace fs = std::filesystem;

namespace {

const std::vector<std::string> kQuickRun = {"train", "--model", "mlp", "--synthetic-size", "300", "--threads", "1",
                                            "--workers", "0", "--quiet"};

/// A one-epoch run into `dir` (`more` may give other --epochs).
std::vector<std::string> quick_run(const std::string& dir, std::vector<std::string> more = {}) {
  std::vector<std::string> args = kQuickRun;
  if (std::find(more.begin(), more.end(), "--epochs") == more.end()) args.insert(args.end(), {"--epochs", "1"});
  args.insert(args.end(), {"--run-dir", dir});
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

/// Every file under `dir` with its content.
std::map<std::string, std::string> files_of(const std::string& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) files[fs::relative(e.path(), dir).string()] = read_file(e.path().string());
  }
  return files;
}

}  // namespace

TEST(Overwrite, NeverDeletesTheUsersOwnFoldersThatBearARunsNames) {
  TempDir tmp;
  const std::string project = tmp.path() + "/project";
  for (const char* part : {"/train", "/validation"}) {
    const ProcessResult made = run_fitscope({"make-images", project + part, "--count", "20", "--size", "16", "--classes", "2"});
    ASSERT_EQ(made.exit_code, 0) << made.err;
  }
  const auto before = files_of(project);
  const ProcessResult r = run_fitscope({"train", "--data", "images:" + project + "/train", "--model", "mlp", "--epochs", "1",
                                        "--threads", "1", "--quiet", "--run-dir", project, "--overwrite"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--overwrite: --run-dir " + project + " holds train/class_0"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no run recorded as its own (no manifest.json): nothing was removed"), std::string::npos) << r.err;
  EXPECT_EQ(files_of(project), before);
}

TEST(Overwrite, RemovesTheEarlierRunsFilesButRefusesOnesTheRunDidNotWriteOrThatChanged) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/run";
  ASSERT_EQ(run_fitscope(quick_run(dir)).exit_code, 0);
  const nlohmann::json manifest = nlohmann::json::parse(read_file(dir + "/manifest.json"));
  EXPECT_TRUE(manifest.at("complete").get<bool>());
  bool listed = false;
  for (const auto& f : manifest.at("files")) listed = listed || f.at("path") == "model.weights.pt";
  EXPECT_TRUE(listed) << manifest.dump();

  std::ofstream(dir + "/train/my_notes.txt") << "mine";  // a user's file inside a run's folder
  ProcessResult r = run_fitscope(quick_run(dir, {"--overwrite"}));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("holds train/my_notes.txt, which no run wrote there (or which changed since), by its "
                       "manifest.json: nothing was removed"), std::string::npos) << r.err;
  EXPECT_EQ(read_file(dir + "/train/my_notes.txt"), "mine");
  EXPECT_TRUE(fs::exists(dir + "/summary.json"));

  fs::remove(dir + "/train/my_notes.txt");
  std::ofstream(dir + "/metrics.csv", std::ios::app) << "edited by hand\n";
  r = run_fitscope(quick_run(dir, {"--overwrite"}));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("holds metrics.csv, which"), std::string::npos) << r.err;

  fs::remove(dir + "/metrics.csv");
  std::ofstream(dir + "/notes.txt") << "beside the run";
  r = run_fitscope(quick_run(dir, {"--overwrite"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_file(dir + "/notes.txt"), "beside the run");
  EXPECT_TRUE(fs::exists(dir + "/metrics.csv"));
}

TEST(Overwrite, OfAKilledRunRemovesOnlyTheFilesItWritesNotOnesPutInItsFoldersSince) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/run";
  ASSERT_EQ(run_fitscope(quick_run(dir, {"--checkpoint-every", "2"})).exit_code, 0);
  // as a run killed mid-training leaves it: a manifest not complete, a backup, event files
  std::ofstream(dir + "/manifest.json") << R"({"version": 1, "complete": false, "files": []})" << "\n";
  fs::create_directories(dir + "/backup");
  std::ofstream(dir + "/backup/ckpt-000000000002.fitscope") << "a backup";
  for (const char* mine : {"train/my_notes.txt", "backup/keep-this.pt", "checkpoints/mine.fitscope"}) {
    fs::create_directories(fs::path(dir + "/" + mine).parent_path());
    std::ofstream(dir + "/" + mine) << "mine";
  }
  ProcessResult r = run_fitscope(quick_run(dir, {"--overwrite"}));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("holds backup/keep-this.pt, checkpoints/mine.fitscope, train/my_notes.txt, which no run wrote there"),
            std::string::npos) << r.err;
  for (const char* kept : {"train/my_notes.txt", "backup/keep-this.pt", "checkpoints/mine.fitscope", "backup/ckpt-000000000002.fitscope"}) {
    EXPECT_TRUE(fs::exists(dir + "/" + kept)) << kept;
  }
  for (const char* mine : {"train/my_notes.txt", "backup/keep-this.pt", "checkpoints/mine.fitscope"}) fs::remove(dir + "/" + mine);
  r = run_fitscope(quick_run(dir, {"--overwrite"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(fs::exists(dir + "/backup/ckpt-000000000002.fitscope"));
}

TEST(RunDirectoryLock, ASecondRunOrOverwriteOfALiveRunsDirectoryExitsTwoNamingItsProcess) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/run";
  std::vector<std::string> args = quick_run(dir, {"--epochs", "100000"});
  args.insert(args.begin(), FITSCOPE_CLI);
  Child live(args);
  // the manifest is written once the live run holds the lock
  ASSERT_TRUE(fitscope::testing::wait_for_file(dir + "/manifest.json"));
  const std::string pid = read_file(dir + "/.fitscope.lock");
  ASSERT_FALSE(pid.empty());
  const std::string message = "--run-dir " + dir + " is in use by a live run (process " + pid.substr(0, pid.size() - 1) +
                              "): wait for it to end, or choose another --run-dir";
  expect_usage_error(quick_run(dir), message);
  expect_usage_error(quick_run(dir, {"--overwrite"}), message);
  live.signal(SIGINT);
  const ProcessResult ended = live.wait();
  EXPECT_EQ(ended.exit_code, 128 + SIGINT) << ended.err;
  EXPECT_TRUE(fs::exists(dir + "/summary.json"));  // the live run's files were not touched
  // the lock goes with its process: the directory is free again
  EXPECT_EQ(run_fitscope(quick_run(dir, {"--overwrite"})).exit_code, 0);
}

TEST(ModelOutputs, PredictAndEvaluateNeverWriteOverARunsOwnFiles) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/run";
  ASSERT_EQ(run_fitscope(quick_run(dir, {"--validation-split", "0.2"})).exit_code, 0);
  const std::string weights = read_file(dir + "/model.weights.pt");
  expect_usage_error({"predict", dir, "--out", dir + "/model.weights.csv"},
                     "--out " + dir + "/model.weights.csv: its tensors' file " + dir + "/model.weights.pt: a file of the run "
                     "directory " + dir + " (model.weights.pt), which this command never replaces");
  expect_usage_error({"evaluate", dir, "--out", dir + "/summary.json"}, "--out " + dir + "/summary.json: a file of the run directory");
  expect_usage_error({"report", dir, "--out", dir + "/train/x.html"}, "--out " + dir + "/train/x.html: a file of the run directory");
  EXPECT_EQ(read_file(dir + "/model.weights.pt"), weights);
  // the run's own outputs are the commands' to write, and the manifest keeps up with them
  ASSERT_EQ(run_fitscope({"evaluate", dir}).exit_code, 0);
  ASSERT_EQ(run_fitscope({"report", dir}).exit_code, 0);
  ASSERT_EQ(run_fitscope({"predict", dir, "--out", dir + "/predictions.csv"}).exit_code, 0);
  fs::remove(dir + "/predictions.csv");
  fs::remove(dir + "/predictions.pt");
  EXPECT_EQ(run_fitscope(quick_run(dir, {"--overwrite"})).exit_code, 0);
}

TEST(ModelOutputs, AreWrittenThroughLinksAndDevicesInsteadOfReplacingThem) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/run", target = tmp.path() + "/kept.json", link = tmp.path() + "/link.json";
  ASSERT_EQ(run_fitscope(quick_run(dir, {"--validation-split", "0.2"})).exit_code, 0);
  std::ofstream(target) << "old";
  fs::create_symlink(target, link);
  ASSERT_EQ(run_fitscope({"evaluate", dir, "--out", link}).exit_code, 0);
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_NE(read_file(target).find("\"logs\""), std::string::npos);

  const ProcessResult r = run_fitscope({"evaluate", dir, "--out", "/dev/stdout"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"examples\": 60"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::is_symlink("/dev/stdout") || fs::is_character_file("/dev/stdout"));

  const std::string fifo = tmp.path() + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string read_back;
  std::thread reader([&] { read_back = read_file(fifo); });
  const ProcessResult p = run_fitscope({"report", dir, "--out", fifo});
  const int unblock = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);  // a reader still waiting gets its end
  if (unblock >= 0) ::close(unblock);
  reader.join();
  EXPECT_EQ(p.exit_code, 0) << p.err;
  EXPECT_TRUE(fs::is_fifo(fifo));
  EXPECT_NE(read_back.find("<html"), std::string::npos);
}

TEST(Evaluate, RefusesWeightsThatChangedSinceTheRunWroteThem) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/run";
  ASSERT_EQ(run_fitscope(quick_run(dir, {"--validation-split", "0.2"})).exit_code, 0);
  std::string weights = read_file(dir + "/model.weights.pt");
  weights[weights.size() / 2] ^= 0x01;
  std::ofstream(dir + "/model.weights.pt", std::ios::binary) << weights;
  expect_usage_error({"evaluate", dir}, dir + "/model.weights.pt: CRC-32 ");
  expect_usage_error({"evaluate", dir}, "in manifest.json (the file changed or was damaged since the run wrote it)");
}

TEST(SkipBadFiles, FilesLeftOutAreCountedInSummaryJsonEvenUnderQuiet) {
  TempDir tmp;
  const std::string images = tmp.path() + "/images", dir = tmp.path() + "/run";
  ASSERT_EQ(run_fitscope({"make-images", images, "--count", "30", "--size", "16", "--classes", "2"}).exit_code, 0);
  std::ofstream(images + "/class_01/cut.jpg") << "\xff\xd8\xff not the rest of a JPEG";
  std::string bomb("\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR\0\0\xff\xff\0\0\xff\xff\x08\x02\0\0\0\0\0\0\0\0\0\0\0IEND\xae\x42\x60\x82", 45);
  std::ofstream(images + "/class_00/bomb.png", std::ios::binary) << bomb;
  std::vector<std::string> args = {"train", "--data", "images:" + images, "--image-size", "16", "--model", "mlp", "--epochs",
                                   "1", "--threads", "1", "--workers", "0", "--quiet", "--run-dir", dir};
  const ProcessResult strict = run_fitscope(args);
  EXPECT_EQ(strict.exit_code, 2) << strict.err;
  EXPECT_NE(strict.err.find(images + "/class_00/bomb.png: PNG header at offset 16: 65535x65535 = 4294836225 pixels, "
                                     "above the budget of 89478485 pixels an image (--max-image-pixels)"),
            std::string::npos) << strict.err;
  args.push_back("--skip-bad-files");
  const ProcessResult r = run_fitscope(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json summary = nlohmann::json::parse(read_file(dir + "/summary.json"));
  EXPECT_EQ(summary.at("skipped_files").at("count"), 2) << summary.at("skipped_files").dump();
  const std::string first = summary.at("skipped_files").at("first").dump();
  EXPECT_NE(first.find("bomb.png"), std::string::npos) << first;
  EXPECT_NE(first.find("cut.jpg"), std::string::npos) << first;
}

TEST(ValidationData, ImageFoldersAreMatchedToTheTrainingClassesByName) {
  TempDir tmp;
  const std::string train = tmp.path() + "/train", validation = tmp.path() + "/validation";
  ASSERT_EQ(run_fitscope({"make-images", train, "--count", "30", "--size", "16", "--classes", "3"}).exit_code, 0);
  ASSERT_EQ(run_fitscope({"make-images", validation, "--count", "30", "--size", "16", "--classes", "3"}).exit_code, 0);
  fs::remove_all(validation + "/class_00");  // a class without validation images: its folder's place moves, not its name
  const std::vector<std::string> args = {"train", "--data", "images:" + train, "--validation-data", "images:" + validation,
                                         "--model", "mlp", "--epochs", "3", "--threads", "1", "--workers", "0", "--quiet",
                                         "--run-dir", tmp.path() + "/run"};
  const ProcessResult r = run_fitscope(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json summary = nlohmann::json::parse(read_file(tmp.path() + "/run/summary.json"));
  EXPECT_GT(summary.at("logs").at("val_accuracy").get<double>(), 0.5);  // by place, class_01 would be read as class 0
  fs::rename(validation + "/class_02", validation + "/class_07");
  expect_usage_error(args, "--validation-data images:" + validation + ": image folder " + validation +
                               ": class folder class_07 is not one of the 3 classes it must match (class_00, class_01, class_02)");
}

TEST(ConfigToml, PathsWithHashQuoteBackslashNewlineOrBytesThatAreNotUtf8RoundTrip) {
  TempDir tmp;
  const std::string odd = tmp.path() + "/a #b \"c\" \\d\ne \xe9";  // '#', quotes, a backslash, a newline, Latin-1
  ASSERT_EQ(run_fitscope({"make-images", odd, "--count", "20", "--size", "16", "--classes", "2"}).exit_code, 0);
  const std::string dir = tmp.path() + "/run";
  const ProcessResult r = run_fitscope({"train", "--data", "images:" + odd, "--model", "mlp", "--epochs", "1", "--threads",
                                        "1", "--blas-threads", "1", "--workers", "0", "--quiet", "--run-dir", dir});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* file : {"summary.json", "report.html", "manifest.json"}) EXPECT_TRUE(fs::exists(dir + "/" + file)) << file;
  EXPECT_NO_THROW((void)nlohmann::json::parse(read_file(dir + "/summary.json")));
  const std::string config = read_file(dir + "/config.toml");
  // the config repeats the run: the same data, read back byte for byte (evaluate reads it too)
  const ProcessResult again = run_fitscope({"train", "--config", dir + "/config.toml", "--run-dir", tmp.path() + "/again"});
  ASSERT_EQ(again.exit_code, 0) << again.err << "\n" << config;
  EXPECT_EQ(read_file(tmp.path() + "/again/config.toml"), config);
  const ProcessResult evaluated = run_fitscope({"evaluate", dir});
  EXPECT_EQ(evaluated.exit_code, 0) << evaluated.err;
  // a newline cannot smuggle a setting in
  EXPECT_EQ(config.find("\ne \xe9"), std::string::npos) << config;
}

TEST(BoundedReads, EvaluateAndReportRefuseALinkToADeviceInsteadOfReadingForever) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/run";
  ASSERT_EQ(run_fitscope(quick_run(dir)).exit_code, 0);
  fs::rename(dir + "/steps.csv", dir + "/steps.csv.kept");
  fs::create_symlink("/dev/zero", dir + "/steps.csv");
  const ProcessResult report = run_fitscope({"report", dir, "--out", tmp.path() + "/page.html"});
  EXPECT_EQ(report.exit_code, 2) << report.err;
  EXPECT_NE(report.err.find(dir + "/steps.csv: not a regular file"), std::string::npos) << report.err;
  fs::rename(dir + "/model.weights.pt", dir + "/model.weights.pt.kept");
  fs::create_symlink("/dev/zero", dir + "/model.weights.pt");
  const ProcessResult evaluate = run_fitscope({"evaluate", dir});
  EXPECT_EQ(evaluate.exit_code, 2) << evaluate.err;
  EXPECT_NE(evaluate.err.find(dir + "/model.weights.pt: not a regular file, but the run recorded "), std::string::npos)
      << evaluate.err;
}

TEST(ConfigToml, RepeatsTheRunFromInsideItsDirectoryWithTheDataPathMadeAbsolute) {
  TempDir tmp;
  ASSERT_EQ(run_fitscope({"make-images", tmp.path() + "/images", "--count", "40", "--size", "16", "--classes", "2"}).exit_code, 0);
  const ProcessResult first = fitscope::testing::run_process(
      {FITSCOPE_CLI, "train", "--data", "images:images", "--model", "mlp", "--epochs", "1", "--threads", "1", "--quiet",
       "--run-dir", "run"}, tmp.path());  // a relative data path, as typed
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::string config = read_file(tmp.path() + "/run/config.toml");
  EXPECT_NE(config.find("\ndata = \"images:" + tmp.path() + "/images\"  # asked: \"images:images\"\n"), std::string::npos) << config;
  const ProcessResult again = fitscope::testing::run_process(
      {FITSCOPE_CLI, "train", "--config", "config.toml", "--run-dir", "../again"}, tmp.path() + "/run");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(read_file(tmp.path() + "/again/model.weights.pt"), read_file(tmp.path() + "/run/model.weights.pt"));
}
