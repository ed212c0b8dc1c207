// Run: a C++ program gets the CLI's run directory, the whole run's wall time split by part, and the
// logs the callbacks add.

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
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
  EXPECT_NE(s.verdict.outside_steps.find("--validation-split"), std::string::npos) << s.verdict.outside_steps;
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

}  // namespace
}  // namespace fitscope

TEST(Run, TheDefaultDirectoryStaysUnderRunsWhateverTheModelIsCalled) {
  EXPECT_EQ(fitscope::default_run_dir("../../x/m.pt").rfind("runs/", 0), 0u);
  const std::string name = fitscope::default_run_dir("../we ird/../m$(x).pt");
  EXPECT_EQ(name.rfind("runs/", 0), 0u);
  EXPECT_EQ(name.substr(name.size() - 6), "-m__x_") << name;
  EXPECT_EQ(name.find('/', 5), std::string::npos) << name;
}
