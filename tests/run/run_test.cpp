// Run: a C++ program gets the CLI's run directory, the whole run's wall time split by part, and the
// logs the callbacks add.

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <functional>
#include <fstream>
#include <sstream>
#include <thread>

#include "fitscope/fitscope.hpp"

namespace fitscope {
namespace {

/// A fresh directory named after the running test.
std::string fresh_dir() {
  const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
  const auto dir = std::filesystem::temp_directory_path() / (std::string("fitscope-run-") + test->name());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

RunOptions quiet_run(const std::string& dir) {
  RunOptions o;
  o.run_dir = dir;
  o.name = "mlp";
  o.progress_bar = false;
  return o;
}

TrainerOptions one_thread() {
  TrainerOptions o;
  o.threads.intra_op = 1;  // no thread search: the steps are the fit's
  return o;
}

TEST(Run, WritesTheRunDirectoryOfTheCommandLineAndTheKeysCallbacksAdd) {
  const std::string tmp = fresh_dir();
  const std::string dir = tmp + "/run";
  fitscope::Run run(quiet_run(dir));
  Trainer trainer(models::Mlp(), one_thread());
  SyntheticOptions data;
  data.size = 640;
  FitOptions fit;
  fit.epochs = 2;
  fit.validation_split = 0.25;
  // as in Keras, a callback adds a key that the later callbacks (CSVLogger), the History and the
  // summary see
  LambdaCallback::Hooks hooks;
  hooks.on_epoch_end = [](int64_t epoch, Logs& logs) { logs.set("twice_loss", 2 * logs.at("loss") + 0 * epoch); };
  fit.callbacks.push_back(std::make_shared<LambdaCallback>(hooks, "AddsAKey"));
  const RunSummary s = run.fit(trainer, make_synthetic(data), fit);

  for (const char* file : {"metrics.csv", "steps.csv", "summary.json", "trace.json", "model.weights.pt", "report.html",
                           "checkpoints/best.fitscope"}) {
    EXPECT_TRUE(std::filesystem::exists(dir + "/" + file)) << file;
  }
  EXPECT_EQ(run.directory(), dir);
  EXPECT_EQ(run.report_path(), dir + "/report.html");
  EXPECT_EQ(s.epochs, 2);
  EXPECT_FALSE(s.interrupted);
  ASSERT_TRUE(s.logs.get("twice_loss"));
  EXPECT_DOUBLE_EQ(*s.logs.get("twice_loss"), 2 * *s.logs.get("loss"));
  EXPECT_TRUE(run.history().last().get("twice_loss"));
  EXPECT_NE(read(dir + "/metrics.csv").find("twice_loss"), std::string::npos);
  const RunSummary back = RunSummary::from_json(read(dir + "/summary.json"), "summary.json");
  EXPECT_EQ(back.to_json(), read(dir + "/summary.json"));
  EXPECT_NEAR(back.run.total(), back.wall_s, 0.01 * back.wall_s);
}

TEST(Run, RefusesARunDirectoryWithAnInterruptedRunsBackupsUnlessResuming) {
  const std::string tmp = fresh_dir();
  const std::string dir = tmp + "/run";
  std::filesystem::create_directories(dir + "/backup");
  std::ofstream(dir + "/backup/ckpt-000000000040.fitscope") << "x";
  fitscope::Run run(quiet_run(dir));
  Trainer trainer(models::Mlp(), one_thread());
  SyntheticOptions data;
  data.size = 64;
  try {
    run.fit(trainer, make_synthetic(data));
    FAIL() << "trained over an interrupted run's backups";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("holds the backups of an interrupted run"), std::string::npos) << e.what();
  }
}

/// A validation set whose examples take 1 ms each to load.
class SlowDataset : public Dataset {
 public:
  explicit SlowDataset(std::shared_ptr<const Dataset> base) : base_(std::move(base)) {}
  int64_t size() const override { return base_->size(); }
  Example get(int64_t index) const override {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return base_->get(index);
  }

 private:
  std::shared_ptr<const Dataset> base_;
};

TEST(Run, SplitsTheWallTimeByPartAndNamesASlowValidation) {
  const std::string tmp = fresh_dir();
  fitscope::Run run(quiet_run(tmp + "/run"));
  Trainer trainer(models::Mlp(), one_thread());
  SyntheticOptions data;
  data.size = 320;
  FitOptions fit;
  fit.epochs = 2;
  data.seed = 1;
  fit.validation_data = std::make_shared<SlowDataset>(std::make_shared<TensorDataset>(make_synthetic(data)));
  data.seed = 0;
  const RunSummary s = run.fit(trainer, make_synthetic(data), fit);

  const RunTime& r = s.run;
  EXPECT_NEAR(r.total(), s.wall_s, 0.01 * s.wall_s) << "the parts add up to the wall time";
  for (double part : {r.startup, r.training_steps, r.validation, r.epoch_end, r.shutdown}) EXPECT_GE(part, 0);
  // 2 epochs x 320 examples x 1 ms of validation against 20 steps of a small MLP
  EXPECT_GE(r.validation, 0.64);
  EXPECT_GT(r.validation, r.training_steps + r.startup + r.epoch_end + r.shutdown);
  EXPECT_EQ(s.verdict.outside_steps.rfind("validation takes ", 0), 0u) << s.verdict.outside_steps;
  EXPECT_NE(s.verdict.outside_steps.find("FitOptions::validation_split"), std::string::npos) << s.verdict.outside_steps;
}

TEST(Run, AModelCheckpointWrittenEveryBatchIsTimedAsTheCheckpointPhase) {
  const std::string tmp = fresh_dir();
  Trainer trainer(models::Mlp(), one_thread());
  SyntheticOptions data;
  data.size = 320;
  ModelCheckpointOptions every;
  every.filepath = tmp + "/ckpt-{epoch:02d}-{batch:03d}.fitscope";
  every.save_freq = 1;
  auto checkpoint = std::make_shared<ModelCheckpoint>(every);
  FitOptions fit;
  fit.callbacks = {checkpoint};
  trainer.fit(make_synthetic(data), fit);
  EXPECT_EQ(checkpoint->saved().size(), 10u);
  const RunSummary s = summarize(trainer, fit);
  // each write (a whole training state through temp file, fsync and rename) is far longer than the
  // callback's own decision
  EXPECT_GT(s.phases.at("checkpoint").mean_ms, s.phases.at("callbacks").mean_ms);
  if (s.verdict.bound == "callbacks") ADD_FAILURE() << "the writes were counted as callbacks: " << s.verdict.advice;
}


TEST(Run, TheDefaultDirectoryStaysUnderRunsWhateverTheModelIsCalled) {
  EXPECT_EQ(fitscope::default_run_dir("../../x/m.pt").rfind("runs/", 0), 0u);
  const std::string name = fitscope::default_run_dir("../we ird/../m$(x).pt");
  EXPECT_EQ(name.rfind("runs/", 0), 0u);
  EXPECT_EQ(name.substr(name.size() - 6), "-m__x_") << name;
  EXPECT_EQ(name.find('/', 5), std::string::npos) << name;
}

/// A run of 3 epochs of the MLP with validation and backups each epoch; `during` (when set) is called
/// on each validation batch with (epoch, batch).
struct ValidatedRun {
  RunSummary summary;
  History history;
  std::vector<at::Tensor> weights;
  int interrupted_by = 0;
  int64_t epoch_ends = 0;
};

ValidatedRun run_validated(const std::string& dir, bool resume, std::function<void(int64_t, int64_t)> during = {}) {
  RunOptions o = quiet_run(dir);
  o.backup = true;
  o.resume = resume;
  o.report = false;
  fitscope::Run run(o);
  torch::manual_seed(0);
  Trainer trainer(models::Mlp(), one_thread());
  SyntheticOptions data;
  data.size = 640;
  FitOptions fit;
  fit.epochs = 3;
  fit.validation_split = 0.25;
  fit.loader.workers = 0;
  ValidatedRun out;
  auto epoch = std::make_shared<int64_t>(0);
  LambdaCallback::Hooks hooks;
  hooks.on_epoch_begin = [epoch](int64_t e, Logs&) { *epoch = e; };
  hooks.on_epoch_end = [&out](int64_t, Logs&) { ++out.epoch_ends; };
  hooks.on_test_batch_end = [epoch, during](int64_t b, Logs&) {
    if (during) during(*epoch, b);
  };
  fit.callbacks.push_back(std::make_shared<LambdaCallback>(hooks, "Watches"));
  out.summary = run.fit(trainer, make_synthetic(data), fit);
  out.history = run.history();
  out.interrupted_by = run.interrupted_by();
  for (const auto& named : trainer.model().named_state()) out.weights.push_back(named.second.clone());
  return out;
}

TEST(Run, ASignalDuringValidationEndsTheRunAtTheNextValidationBatchAndResumeEndsAsAnUninterruptedRun) {
  const std::string tmp = fresh_dir();
  const ValidatedRun whole = run_validated(tmp + "/whole", false);
  int64_t batches_after_signal = -1;
  const ValidatedRun cut = run_validated(tmp + "/cut", false, [&](int64_t epoch, int64_t batch) {
    if (batches_after_signal >= 0) ++batches_after_signal;
    if (epoch == 1 && batch == 1) {
      std::raise(SIGTERM);  // the Run's handler records it
      batches_after_signal = 0;
    }
  });
  EXPECT_EQ(cut.interrupted_by, SIGTERM);
  EXPECT_EQ(batches_after_signal, 1);          // the validation ended at the next batch
  EXPECT_EQ(cut.history.epochs().size(), 1u);  // epoch 1 did not end: no half-validated logs
  EXPECT_EQ(cut.epoch_ends, 1);
  EXPECT_TRUE(cut.summary.interrupted);
  EXPECT_EQ(cut.summary.epochs, 1);
  ASSERT_FALSE(checkpoint_files(*posix_file_system(), tmp + "/cut/backup").empty());

  const ValidatedRun resumed = run_validated(tmp + "/cut", true);
  EXPECT_EQ(resumed.interrupted_by, 0);
  ASSERT_EQ(resumed.history.epochs().size(), 2u);  // epoch 1 from its validation on, then epoch 2
  ASSERT_EQ(whole.history.epochs().size(), 3u);
  EXPECT_EQ(resumed.history.epochs(), (std::vector<int64_t>{1, 2}));
  for (const char* key : {"loss", "accuracy", "val_loss", "val_accuracy"}) {
    for (std::size_t e = 0; e < 2; ++e) EXPECT_EQ(resumed.history.at(key)[e], whole.history.at(key)[e + 1]) << key;
  }
  ASSERT_EQ(resumed.weights.size(), whole.weights.size());
  for (std::size_t i = 0; i < whole.weights.size(); ++i) EXPECT_TRUE(at::equal(resumed.weights[i], whole.weights[i])) << i;
}

TEST(Run, ASignalAfterTrainingEndedLeavesTheRunCompleteWithAWarning) {
  const std::string dir = fresh_dir() + "/run";
  RunOptions o = quiet_run(dir);
  o.report = true;
  fitscope::Run run(o);
  Trainer trainer(models::Mlp(), one_thread());
  SyntheticOptions data;
  data.size = 64;
  FitOptions fit;
  LambdaCallback::Hooks hooks;
  hooks.on_train_end = [](Logs&) { std::raise(SIGINT); };  // training is over: the files are next
  fit.callbacks.push_back(std::make_shared<LambdaCallback>(hooks, "SignalsAtTheEnd"));
  const RunSummary s = run.fit(trainer, make_synthetic(data), fit);
  // training had ended (its backups are gone): the run is complete, not interrupted, and says so
  EXPECT_EQ(run.interrupted_by(), 0);
  EXPECT_FALSE(s.interrupted);
  EXPECT_EQ(s.epochs, 1);
  const RunSummary back = RunSummary::from_json(read(dir + "/summary.json"), "summary.json");
  EXPECT_FALSE(back.interrupted);
  ASSERT_FALSE(back.warnings.empty());
  EXPECT_NE(back.warnings.back().find("came after training ended, while the run's files were written: they are complete"),
            std::string::npos) << back.warnings.back();
  EXPECT_TRUE(std::filesystem::exists(dir + "/report.html"));
}

TEST(Run, TheTemporaryFilesOfAKilledRunsWritesAreRemovedAtTheNextStart) {
  const std::string dir = fresh_dir() + "/run";
  for (const char* torn : {"summary.json.tmp.4242.0", "backup/ckpt-000000000040.fitscope.tmp.4242.3",
                           "checkpoints/best.fitscope.tmp.17.1"}) {
    std::filesystem::create_directories(std::filesystem::path(dir + "/" + torn).parent_path());
    std::ofstream(dir + "/" + torn) << "half a file";
  }
  std::ofstream(dir + "/notes.tmp.1.2") << "the user's";  // not a run's name: left alone
  write_run_manifest(dir, /*complete=*/false);              // as the killed run left it
  RunOptions o = quiet_run(dir);
  o.overwrite = true;
  fitscope::Run run(o);
  Trainer trainer(models::Mlp(), one_thread());
  SyntheticOptions data;
  data.size = 64;
  const RunSummary s = run.fit(trainer, make_synthetic(data));
  EXPECT_FALSE(std::filesystem::exists(dir + "/summary.json.tmp.4242.0"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/backup/ckpt-000000000040.fitscope.tmp.4242.3"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/checkpoints/best.fitscope.tmp.17.1"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/notes.tmp.1.2"));
  bool warned = false;
  for (const auto& w : s.warnings) warned = warned || w.find("removed 3 temporary file(s)") != std::string::npos;
  EXPECT_TRUE(warned);
}

}  // namespace
}  // namespace fitscope
