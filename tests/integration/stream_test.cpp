// `fitscope train --data tfrecord:GLOB | tar:GLOB` in real processes: shards written by a program that
// is not fitscope (tests/integration/write_shards.py) train the seed CNN to the accuracy of the same
// images as a folder; a streamed run killed mid-epoch resumes to the uninterrupted run's weights, bit
// for bit; bad records exit 2 naming the file, the offset and the feature, or are skipped and counted.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "killed_runs.hpp"
#include "process.hpp"

using fitscope::testing::expect_same_weights;
using fitscope::testing::kill_once_backed_up;
using fitscope::testing::ProcessResult;
using fitscope::testing::read_file;
using fitscope::testing::run_process;
using fitscope::testing::TempDir;
using json = nlohmann::json;

namespace {

ProcessResult fitscope_cli(std::vector<std::string> args) {
  args.insert(args.begin(), FITSCOPE_CLI);
  return run_process(args);
}

json summary_of(const std::string& run_dir) { return json::parse(read_file(run_dir + "/summary.json")); }

}  // namespace

TEST(Streams, ShardsWrittenByAnotherProgramTrainTheSeedCnnToTheFolderAccuracy) {
#ifdef FITSCOPE_SANITIZED
  GTEST_SKIP() << "three trainings compared by accuracy: run in the plain build (the sanitizers check the stream's "
                  "code in the other tests)";
#endif
  const TempDir tmp;
  const std::string train = tmp.path() + "/train", val = tmp.path() + "/val";
  const ProcessResult made = fitscope_cli({"make-images", train, "--count", "2500", "--size", "64", "--seed", "1"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  // the last 500 images (NNNNNN.jpg from 002000 on: the third part make-images draws, around the same
  // class prototypes) are the validation folder
  namespace fs = std::filesystem;
  std::vector<fs::path> held_out;
  for (const auto& image : fs::recursive_directory_iterator(train)) {
    if (image.is_regular_file() && image.path().filename().string() >= "002000") held_out.push_back(image.path());
  }
  ASSERT_EQ(held_out.size(), 500u);
  for (const fs::path& image : held_out) {
    const fs::path into = fs::path(val) / image.parent_path().filename();
    fs::create_directories(into);
    fs::rename(image, into / image.filename());
  }
  for (const char* kind : {"tfrecord", "tar"}) {
    const ProcessResult written = run_process({FITSCOPE_PYTHON, std::string(FITSCOPE_SOURCE_DIR) + "/tests/integration/write_shards.py",
                                               kind, train, tmp.path() + "/" + kind, "3"});
    ASSERT_EQ(written.exit_code, 0) << written.err;
  }
  const auto val_accuracy = [&](const std::string& data, const std::string& name) {
    const std::string run = tmp.path() + "/run-" + name;
    const ProcessResult r = fitscope_cli({"train", "--model", "cnn", "--data", data, "--validation-data", "images:" + val,
                                          "--epochs", "1", "--seed", "3", "--shuffle-buffer", "2000", "--run-dir", run,
                                          "--quiet"});
    EXPECT_EQ(r.exit_code, 0) << name << ": " << r.err;
    return r.exit_code == 0 ? summary_of(run).at("logs").at("val_accuracy").get<double>() : -1.0;
  };
  const double folder = val_accuracy("images:" + train, "folder");
  const double tfrecord = val_accuracy("tfrecord:" + tmp.path() + "/tfrecord/part-*.tfrecord", "tfrecord");
  const double tar = val_accuracy("tar:" + tmp.path() + "/tar/part-*.tar", "tar");
  std::cout << "[ measured ] val_accuracy: folder " << folder << ", tfrecord " << tfrecord << ", tar " << tar << "\n";
  EXPECT_GE(folder, 0.8);  // well above the 0.1 of a guess: the accuracies compared say something
  EXPECT_NEAR(tfrecord, folder, 0.05);
  EXPECT_NEAR(tar, folder, 0.05);
  // the run's record of what it read
  const json streams = summary_of(tmp.path() + "/run-tar").at("streams");
  EXPECT_EQ(streams.at("shards"), 3);
  EXPECT_EQ(streams.at("records_per_epoch"), 2000);  // 2500 written, 500 held out
  EXPECT_EQ(streams.at("ranks").at(0).at("shards").size(), 3u);
}

TEST(Streams, TheReadmesShardExampleRunAsWrittenValidatesAboveNinetyPercent) {
#ifdef FITSCOPE_SANITIZED
  GTEST_SKIP() << "a training judged by its accuracy: run in the plain build";
#endif
  // the README's first lines under "Training on shards", each command split at its spaces, quotes
  // dropped: make-images shards, make-images val --held-out, train on the shards validating on val
  const std::string readme = read_file(std::string(FITSCOPE_SOURCE_DIR) + "/README.md");
  const std::size_t section = readme.find("#### Training on shards");
  ASSERT_NE(section, std::string::npos);
  const std::size_t block = readme.find("```\n", section) + 4;
  std::vector<std::vector<std::string>> commands;
  for (std::size_t at = block; readme.compare(at, 3, "```") != 0 && commands.size() < 3;) {
    const std::size_t end = readme.find('\n', at);
    std::vector<std::string> words;
    std::istringstream line(readme.substr(at, end - at));
    for (std::string word; line >> word;) {
      word.erase(std::remove(word.begin(), word.end(), '\''), word.end());
      words.push_back(word);
    }
    commands.push_back(words);
    at = end + 1;
  }
  ASSERT_EQ(commands.size(), 3u);
  ASSERT_EQ(commands[2].at(1), "train");
  const TempDir tmp;
  for (std::vector<std::string>& command : commands) {
    ASSERT_EQ(command.at(0), "fitscope");
    command.erase(command.begin());
    if (command[0] == "train") command.insert(command.end(), {"--run-dir", "run", "--quiet"});
    const ProcessResult r = run_process([&] {
      std::vector<std::string> args = {"/bin/sh", "-c", "cd '" + tmp.path() + "' && exec \"$0\" \"$@\"", FITSCOPE_CLI};
      args.insert(args.end(), command.begin(), command.end());
      return args;
    }());
    ASSERT_EQ(r.exit_code, 0) << command[0] << ": " << r.err;
  }
  const double accuracy = summary_of(tmp.path() + "/run").at("logs").at("val_accuracy").get<double>();
  std::cout << "[ measured ] the README's shard example: val_accuracy " << accuracy << "\n";
  EXPECT_GT(accuracy, 0.9);
}

TEST(Streams, AStreamWithoutValidationDataSaysItIsNotValidated) {
  const TempDir tmp;
  const std::string shards = tmp.path() + "/shards", run = tmp.path() + "/run";
  ASSERT_EQ(fitscope_cli({"make-images", shards, "--count", "40", "--size", "8", "--layout", "tfrecord", "--shards", "2"}).exit_code, 0);
  const ProcessResult r = fitscope_cli({"train", "--model", "mlp", "--data", "tfrecord:" + shards + "/*.tfrecord", "--epochs", "1",
                                        "--run-dir", run});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string said = "--data tfrecord:" + shards + "/*.tfrecord is a stream, which has no last examples to hold out: the "
                           "run is not validated (--validation-split 0.2 dropped); give --validation-data to validate it";
  EXPECT_NE(r.err.find("fitscope: warning: " + said), std::string::npos) << r.err;
  const json warnings = summary_of(run).at("warnings");
  EXPECT_NE(warnings.dump().find("is a stream, which has no last examples to hold out"), std::string::npos) << warnings.dump();
  EXPECT_FALSE(summary_of(run).at("logs").contains("val_loss"));
}

TEST(Streams, AStreamedRunKilledMidEpochResumesToTheUninterruptedWeights) {
  const TempDir tmp;
  const std::string shards = tmp.path() + "/shards";
  const ProcessResult made = fitscope_cli({"make-images", shards, "--count", "600", "--size", "16", "--layout", "tfrecord",
                                           "--shards", "3", "--gzip"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const auto train_into = [&](const std::string& dir, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {FITSCOPE_CLI, "train", "--model", "mlp", "--data", "tfrecord:" + shards + "/*.tfrecord.gz",
                                     "--shuffle-buffer", "100", "--epochs", "4", "--batch-size", "16", "--workers", "2",
                                     "--threads", "1", "--checkpoint-every", "10", "--seed", "7", "--run-dir", dir, "--verbose", "2"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  const std::string whole = tmp.path() + "/whole", killed = tmp.path() + "/killed";
  ASSERT_EQ(run_process(train_into(whole)).exit_code, 0);
  // killed once a backup of step 50 or later exists (epoch 1, batch 12 on: inside an epoch of 38 batches)
  const ProcessResult kill = kill_once_backed_up(train_into(killed), killed, 50);
  ASSERT_EQ(kill.exit_code, 0) << "the run ended before it could be killed";
  EXPECT_EQ(kill.out, "status=137\n");
  const ProcessResult resumed = run_process(train_into(killed, {"--resume"}));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  expect_same_weights(whole, killed);
  EXPECT_EQ(read_file(killed + "/metrics.csv"), read_file(whole + "/metrics.csv"));
}

TEST(Streams, BadRecordsExitTwoNamingTheFileOffsetAndFeatureOrAreSkippedAndCounted) {
  const TempDir tmp;
  const std::string shards = tmp.path() + "/shards";
  ASSERT_EQ(fitscope_cli({"make-images", shards, "--count", "40", "--size", "16", "--layout", "tar", "--shards", "2"}).exit_code, 0);
  // a third shard: a .cls member without its image (Python's tarfile, as another program would write it)
  const std::string bad = shards + "/shard-00002.tar";
  const ProcessResult written = run_process({FITSCOPE_PYTHON, "-c",
      "import tarfile, io\n"
      "with tarfile.open('" + bad + "', 'w', format=tarfile.USTAR_FORMAT) as t:\n"
      "  i = tarfile.TarInfo('lonely.cls'); i.size = 1; t.addfile(i, io.BytesIO(b'3'))\n"});
  ASSERT_EQ(written.exit_code, 0) << written.err;
  const std::vector<std::string> train = {"train", "--model", "mlp", "--data", "tar:" + shards + "/*.tar", "--epochs", "1",
                                          "--run-dir", tmp.path() + "/run"};
  const ProcessResult refused = fitscope_cli(train);
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("--data tar:" + shards + "/*.tar: " + bad + ": the sample at byte offset 0 (key 'lonely') has "
                             "no 'jpg' or 'jpeg' or 'png' part"),
            std::string::npos) << refused.err;

  std::vector<std::string> skipping = train;
  skipping.push_back("--skip-bad-files");
  const ProcessResult skipped = fitscope_cli(skipping);
  ASSERT_EQ(skipped.exit_code, 0) << skipped.err;
  const json summary = summary_of(tmp.path() + "/run");
  EXPECT_EQ(summary.at("streams").at("skipped_records"), 1);
  EXPECT_EQ(summary.at("streams").at("records_per_epoch"), 40);
  EXPECT_EQ(summary.at("skipped_files").at("count"), 1);
  // its config.toml repeats it (the CLI's default validation split, which a stream does not take, is 0 there)
  const ProcessResult repeated = fitscope_cli({"train", "--config", tmp.path() + "/run/config.toml", "--run-dir", tmp.path() + "/again"});
  ASSERT_EQ(repeated.exit_code, 0) << repeated.err;
  EXPECT_EQ(summary_of(tmp.path() + "/again").at("streams").at("records_per_epoch"), 40);

  // --validation-split on a stream is refused, naming the flag
  std::vector<std::string> split = skipping;
  split.insert(split.end(), {"--validation-split", "0.2", "--overwrite"});
  const ProcessResult no_split = fitscope_cli(split);
  EXPECT_EQ(no_split.exit_code, 2);
  EXPECT_NE(no_split.err.find("--validation-split 0.2"), std::string::npos) << no_split.err;
}
