#include <gtest/gtest.h>

#include <torch/nn/modules/linear.h>
#include <torch/utils.h>

#include <filesystem>
#include <fstream>
#include <cmath>
#include <limits>
#include <sstream>

#include "fitscope/callbacks/csv_logger.hpp"
#include "fitscope/callbacks/early_stopping.hpp"
#include "fitscope/callbacks/learning_rate_scheduler.hpp"
#include "fitscope/callbacks/model_checkpoint.hpp"
#include "fitscope/callbacks/reduce_lr_on_plateau.hpp"
#include "fitscope/callbacks/terminate_on_nan.hpp"
#include "fitscope/train/trainer.hpp"

using namespace fitscope;

namespace {

/// Hooks take the logs by reference (a callback may add keys): an lvalue of a temporary.
Logs& lvalue(Logs&& logs) { return logs; }

/// A real trainer's context, with the checkpoints a callback requests from on_epoch_end taken at
/// once (as the fit loop takes them after the hook).
class DrivenContext : public TrainingContext {
 public:
  explicit DrivenContext(Trainer& trainer) : t_(trainer) {}
  void request_stop() override { t_.context().request_stop(); }
  bool stop_requested() const override { return t_.context().stop_requested(); }
  double learning_rate() const override { return t_.context().learning_rate(); }
  void set_learning_rate(double lr) override { t_.context().set_learning_rate(lr); }
  int64_t global_step() const override { return t_.context().global_step(); }
  const TrainingParams& params() const override { return t_.context().params(); }
  Model& model() override { return t_.model(); }
  const PhaseStats& step_stats() const override { return t_.measured().stats; }
  bool is_chief() const override { return true; }
  void warn(const std::string& text) override { t_.context().warn(text); }
  void request_checkpoint(Save save) override { save(epoch_ + 1, 0); }
  void capture_state(TrainingState& into, int64_t epoch, int64_t batch, StateCapture how) override {
    t_.context().capture_state(into, epoch, batch, how);
  }
  void restore(const TrainingState& state) override { t_.context().restore(state); }
  const at::Tensor* batch_outputs() const override { return t_.context().batch_outputs(); }
  int64_t epoch_ = 0;

 private:
  Trainer& t_;
};

/// Drives a callback's epoch hooks with scripted logs, attached to a real trainer.
struct Driver {
  Trainer trainer{torch::nn::Linear(2, 2)};
  DrivenContext context{trainer};
  int64_t run(Callback& callback, const std::string& key, const std::vector<double>& values) {
    callback.set_context(&context);
    callback.on_train_begin(lvalue({}));
    int64_t epoch = 0;
    for (; epoch < static_cast<int64_t>(values.size()); ++epoch) {
      context.epoch_ = epoch;
      callback.on_epoch_end(epoch, lvalue(Logs{{key, values[epoch]}}));
      if (trainer.context().stop_requested()) break;
    }
    return epoch;  // the epoch at which a stop was requested, or the count
  }
};

}  // namespace

TEST(EarlyStopping, StopsAfterPatienceEpochsWithoutImprovementLikeKeras) {
  Driver d;
  EarlyStopping es({"val_loss", 0, 2});
  EXPECT_EQ(d.run(es, "val_loss", {1.0, 0.9, 0.95, 0.96, 0.97, 0.5}), 3);
  EXPECT_EQ(es.stopped_epoch(), 3);
  EXPECT_DOUBLE_EQ(es.best(), 0.9);
  EXPECT_EQ(es.best_epoch(), 1);
}

TEST(EarlyStopping, MinDeltaBaselineModeAndStartFromEpoch) {
  {
    Driver d;  // improvements smaller than min_delta do not count
    EarlyStopping es({"val_loss", 0.1, 1});
    EXPECT_EQ(d.run(es, "val_loss", {1.0, 0.95, 0.5}), 1);
  }
  {
    Driver d;  // accuracy is maximised under auto
    EarlyStopping es({"val_accuracy", 0, 1});
    EXPECT_EQ(d.run(es, "val_accuracy", {0.5, 0.6, 0.55, 0.7}), 2);
  }
  {
    Driver d;  // improvements that do not beat the baseline do not reset the count (as in Keras)
    EarlyStoppingOptions o{"val_loss", 0, 2};
    o.baseline = 0.5;
    EarlyStopping es(o);
    EXPECT_EQ(d.run(es, "val_loss", {1.0, 0.9, 0.9, 0.9}), 2);  // without the baseline: 3
  }
  {
    Driver d;  // the first epochs are not watched
    EarlyStoppingOptions o{"val_loss", 0, 0};
    o.start_from_epoch = 3;
    EarlyStopping es(o);
    EXPECT_EQ(d.run(es, "val_loss", {1.0, 2.0, 3.0, 4.0, 5.0}), 4);
  }
  EXPECT_THROW(EarlyStopping({"val_loss", 0, 0, "up"}), std::invalid_argument);
}

TEST(EarlyStopping, RestoresTheBestWeightsAtTheEndOfTrainingStoppedEarlyOrNotLikeKeras3) {
  for (const bool stops : {true, false}) {
    Driver d;
    EarlyStoppingOptions o{"val_loss", 0, stops ? 1 : 5};
    o.restore_best_weights = true;
    EarlyStopping es(o);
    es.set_context(&d.trainer.context());
    es.on_train_begin(lvalue({}));
    auto weight = d.trainer.model().named_state().front().second;
    auto set_weight = [&](float v) {
      torch::NoGradGuard g;
      weight.fill_(v);
    };
    set_weight(1);
    es.on_epoch_end(0, lvalue(Logs{{"val_loss", 0.5}}));  // best
    set_weight(2);
    es.on_epoch_end(1, lvalue(Logs{{"val_loss", 0.9}}));  // worse: stops with patience 1
    EXPECT_EQ(d.trainer.context().stop_requested(), stops);
    EXPECT_EQ(weight.max().item<float>(), 2.0f) << "the stopping epoch's later callbacks see its own weights";
    es.on_train_end(lvalue({}));
    EXPECT_EQ(weight.min().item<float>(), 1.0f);
    EXPECT_EQ(weight.max().item<float>(), 1.0f);
  }
}

TEST(EarlyStopping, AnImprovementBeatsTheBaselineByMinDeltaToResetTheCount) {
  Driver d;
  EarlyStoppingOptions o{"val_loss", 0.1, 2};
  o.baseline = 0.5;
  EarlyStopping es(o);
  // 0.45 improves on the best by more than 0.1 but beats the baseline by less: the count runs on, and
  // stops at epoch 2 (comparing with the bare baseline, it would reset and run a third epoch)
  EXPECT_EQ(d.run(es, "val_loss", {1.0, 0.45, 0.44}), 2);
}

TEST(ReduceLROnPlateau, ReducesAfterPatienceThenCoolsDownAndStopsAtMinLr) {
  Driver d;
  d.trainer.context().set_learning_rate(1.0);
  ReduceLROnPlateauOptions o;
  o.factor = 0.5;
  o.patience = 1;
  o.cooldown = 2;  // Keras counts the reduction's epoch into the cooldown
  o.min_lr = 0.2;
  ReduceLROnPlateau r(o);
  r.set_context(&d.trainer.context());
  r.on_train_begin(lvalue({}));
  std::vector<double> lrs;
  for (int64_t e = 0; e < 7; ++e) {
    r.on_epoch_end(e, lvalue(Logs{{"val_loss", 1.0}}));  // never improves after the first epoch
    lrs.push_back(d.trainer.context().learning_rate());
  }
  EXPECT_EQ(lrs, (std::vector<double>{1.0, 0.5, 0.5, 0.25, 0.25, 0.2, 0.2}));
}

TEST(LearningRateScheduler, SetsTheRateAtEachEpochStartAndTheLogsShowIt) {
  torch::manual_seed(0);
  Trainer trainer{torch::nn::Linear(4, 3)};
  FitOptions fit;
  fit.epochs = 3;
  fit.callbacks = {std::make_shared<LearningRateScheduler>([](int64_t epoch, double lr) {
    return epoch == 0 ? 0.1 : lr / 10;
  })};
  const History h = trainer.fit(TensorDataset(torch::randn({8, 4}), torch::randint(3, {8}, torch::kLong)), fit);
  ASSERT_EQ(h.at("learning_rate").size(), 3u);  // Keras 3's key, added by the scheduler
  EXPECT_NEAR(h.at("learning_rate")[0], 0.1, 1e-12);
  EXPECT_NEAR(h.at("learning_rate")[1], 0.01, 1e-12);
  EXPECT_NEAR(h.at("learning_rate")[2], 0.001, 1e-12);
}

TEST(LearningRateScheduler, AcceptsARateOfZeroAndNamesANegativeOrNonFiniteOne) {
  torch::manual_seed(0);
  Trainer trainer{torch::nn::Linear(4, 3)};
  const TensorDataset data(torch::randn({8, 4}), torch::randint(3, {8}, torch::kLong));
  FitOptions fit;
  fit.epochs = 2;
  fit.callbacks = {std::make_shared<LearningRateScheduler>([](int64_t epoch, double) { return epoch == 0 ? 0.0 : 0.01; })};
  const History h = trainer.fit(data, fit);  // a warm-up from 0, as Keras allows
  EXPECT_EQ(h.at("learning_rate"), (std::vector<double>{0.0, 0.01}));
  for (const double bad : {-1.0, std::nan("")}) {
    fit.callbacks = {std::make_shared<LearningRateScheduler>([bad](int64_t, double) { return bad; })};
    try {
      trainer.fit(data, fit);
      FAIL() << "accepted " << bad;
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()).rfind("learning rate must be a finite number >= 0, got ", 0), 0u) << e.what();
    }
  }
}

TEST(ReduceLROnPlateau, AddsTheLearningRateToTheLogsWhichHaveNoneWithoutIt) {
  torch::manual_seed(0);
  Trainer trainer{torch::nn::Linear(4, 3)};
  const TensorDataset data(torch::randn({8, 4}), torch::randint(3, {8}, torch::kLong));
  EXPECT_FALSE(trainer.fit(data).last().get("learning_rate"));
  ReduceLROnPlateauOptions o;
  o.monitor = "loss";
  FitOptions fit;
  fit.callbacks = {std::make_shared<ReduceLROnPlateau>(o)};
  EXPECT_EQ(trainer.fit(data, fit).last().get("learning_rate"), trainer.context().learning_rate());
}

TEST(TerminateOnNaN, StopsAfterTheBatchWhoseLossIsNotFinite) {
  TrainerOptions options;
  int64_t step = 0;
  options.train_step = [&step](const Batch& batch, StepContext& ctx) {
    StepOutput out = standard_train_step(batch, ctx);
    if (++step == 3) out.loss = at::scalar_tensor(std::numeric_limits<float>::quiet_NaN());
    return out;
  };
  Trainer trainer(make_model(torch::nn::Linear(4, 3)), options);
  FitOptions fit;
  fit.epochs = 5;
  fit.loader.batch_size = 2;  // 5 steps an epoch
  fit.callbacks = {std::make_shared<TerminateOnNaN>()};
  const TensorDataset data(torch::randn({10, 4}), torch::randint(3, {10}, torch::kLong));
  trainer.fit(data, fit);
  EXPECT_EQ(trainer.context().global_step(), 3);
  step = 0;
  fit.callbacks = {std::make_shared<TerminateOnNaN>(/*raise_error=*/true)};
  try {
    trainer.fit(data, fit);
    FAIL() << "expected an exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "the loss of batch 2 (global step 6) is nan, not a finite number: the training diverged (TerminateOnNaN)");
  }
}

TEST(CSVLogger, WritesTheHeaderAndOneRowPerEpochWithSortedKeys) {
  const auto path = (std::filesystem::temp_directory_path() / "fitscope_csv_logger_test.csv").string();
  torch::manual_seed(0);
  Trainer trainer{torch::nn::Linear(4, 3)};
  FitOptions fit;
  fit.epochs = 2;
  fit.validation_split = 0.5;
  fit.callbacks = {std::make_shared<CSVLogger>(path)};
  const History h = trainer.fit(TensorDataset(torch::randn({8, 4}), torch::randint(3, {8}, torch::kLong)), fit);
  std::ifstream in(path);
  std::string header, row0, row1, extra;
  std::getline(in, header);
  std::getline(in, row0);
  std::getline(in, row1);
  EXPECT_FALSE(std::getline(in, extra));
  EXPECT_EQ(header, "epoch,accuracy,loss,val_accuracy,val_loss");
  EXPECT_EQ(row0.substr(0, 2), "0,");
  EXPECT_EQ(row1.substr(0, 2), "1,");
  std::istringstream cells(row1);
  std::string cell;
  std::getline(cells, cell, ',');
  std::getline(cells, cell, ',');
  EXPECT_DOUBLE_EQ(std::stod(cell), h.at("accuracy")[1]);
  std::filesystem::remove(path);
}

TEST(CSVLogger, WritesTheShortestNumberThatReadsBackExactly) {
  const auto path = (std::filesystem::temp_directory_path() / "fitscope_csv_logger_shortest.csv").string();
  CSVLogger logger(path);
  logger.on_train_begin(lvalue({}));
  logger.on_epoch_end(0, lvalue(Logs{{"a", 5.2}, {"b", 0.1 + 0.2}, {"c", 1e-30}}));
  logger.on_train_end(lvalue({}));
  std::ifstream in(path);
  std::string header, row;
  std::getline(in, header);
  std::getline(in, row);
  EXPECT_EQ(header, "epoch,a,b,c,val_a,val_b,val_c");  // as Keras 3: the val_ columns, NA without validation
  EXPECT_EQ(row, "0,5.2,0.30000000000000004,1e-30,NA,NA,NA");  // not 5.2000000000000002
  EXPECT_EQ(std::stod("0.30000000000000004"), 0.1 + 0.2);
  std::filesystem::remove(path);
}

TEST(CallbackList, NeverMovesACallbackThatChangesTrainingOffTheTrainingThread) {
  auto stopper = std::make_shared<EarlyStopping>();
  stopper->set_async(true);
  auto logger = std::make_shared<CSVLogger>("/dev/null");
  logger->set_async(true);
  CallbackList list({stopper, logger});
  EXPECT_EQ(list.callbacks()[0]->mode(), "sync");
  EXPECT_EQ(list.callbacks()[1]->mode(), "async");
}

TEST(CSVLogger, AppendsToAnExistingFileWithoutASecondHeaderAndUsesTheSeparator) {
  const auto path = (std::filesystem::temp_directory_path() / "fitscope_csv_logger_append.csv").string();
  std::filesystem::remove(path);
  torch::manual_seed(0);
  Trainer trainer{torch::nn::Linear(4, 3)};
  const TensorDataset data(torch::randn({8, 4}), torch::randint(3, {8}, torch::kLong));
  FitOptions fit;
  fit.loader.workers = 0;
  fit.callbacks = {std::make_shared<CSVLogger>(path, ';', /*append=*/true)};
  trainer.fit(data, fit);
  fit.initial_epoch = 1;
  fit.epochs = 2;
  trainer.fit(data, fit);
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "epoch;accuracy;loss;val_accuracy;val_loss");
  EXPECT_EQ(lines[1].substr(0, 2), "0;");
  EXPECT_EQ(lines[2].substr(0, 2), "1;");
  std::filesystem::remove(path);
}

TEST(ModelCheckpoint, FillsTheTemplateLikeKeras) {
  const Logs logs{{"val_accuracy", 0.91234}, {"loss", 0.5}};
  EXPECT_EQ(format_checkpoint_path("ckpt-{epoch:02d}-{val_accuracy:.4f}.pt", 2, 0, logs), "ckpt-03-0.9123.pt");
  EXPECT_EQ(format_checkpoint_path("b{epoch}-{batch:03d}-{loss}", 0, 7, logs), "b1-008-0.5");  // both 1-based
  try {
    format_checkpoint_path("x-{val_loss:.2f}", 0, 0, logs);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "checkpoint path x-{val_loss:.2f}: the logs have no 'val_loss' (they have: val_accuracy, loss)");
  }
  // a spec is a number's format, nothing printf would read more arguments for
  for (const char* bad : {"{epoch:s%d}", "{epoch:%n%d}", "{epoch:999999d}", "{loss:s%f}", "{loss:.4s}", "{loss:*.2f}"}) {
    EXPECT_THROW(format_checkpoint_path(bad, 0, 0, logs), std::invalid_argument) << bad;
  }
  EXPECT_EQ(format_checkpoint_path("{epoch:-3d}|{loss:+.1e}", 0, 0, logs), "1  |+5.0e-01");
}

TEST(ModelCheckpoint, IsNamedByItsFileSoThatTwoAreToldApartOrByTheNameGiven) {
  ModelCheckpointOptions o;
  o.filepath = "/runs/a/checkpoints/best.fitscope";
  EXPECT_EQ(ModelCheckpoint(o).name(), "ModelCheckpoint(best.fitscope)");
  o.filepath = "/runs/a/best.weights.pt";
  EXPECT_EQ(ModelCheckpoint(o).name(), "ModelCheckpoint(best.weights.pt)");
  o.name = "EveryEpoch";
  EXPECT_EQ(ModelCheckpoint(o).name(), "EveryEpoch");
}

TEST(ModelCheckpoint, SaveBestOnlyWritesWhenTheMonitoredValueImproves) {
  const auto dir = std::filesystem::temp_directory_path() / "fitscope_model_checkpoint";
  std::filesystem::remove_all(dir);
  ModelCheckpointOptions o;
  o.filepath = (dir / "w-{epoch:02d}-{val_loss:.2f}.pt").string();
  o.save_best_only = true;
  o.save_weights_only = true;
  std::vector<std::string> warnings;
  o.warn = [&](const std::string& w) { warnings.push_back(w); };
  ModelCheckpoint checkpoint(o);
  Driver driver;
  driver.run(checkpoint, "val_loss", {0.9, 0.7, 0.8, 0.7, 0.5});
  std::vector<std::string> names;
  for (const auto& p : checkpoint.saved()) names.push_back(std::filesystem::path(p).filename().string());
  EXPECT_EQ(names, (std::vector<std::string>{"w-01-0.90.pt", "w-02-0.70.pt", "w-05-0.50.pt"}));
  for (const auto& p : checkpoint.saved()) EXPECT_TRUE(std::filesystem::exists(p)) << p;
  // the monitored key is missing: a warning, and a save anyway (Keras 3), which the template's
  // {val_loss} then fails, naming the key (Keras's KeyError)
  EXPECT_THROW(checkpoint.on_epoch_end(5, lvalue(Logs{{"loss", 0.1}})), std::invalid_argument);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("val_loss available (the logs have no such key): saving anyway"), std::string::npos);
  ModelCheckpointOptions anyway = o;
  anyway.filepath = (dir / "w-{epoch:02d}.pt").string();
  ModelCheckpoint saves(anyway);
  Driver other;
  other.run(saves, "loss", {0.1});
  ASSERT_EQ(saves.saved().size(), 1u);
  EXPECT_EQ(std::filesystem::path(saves.saved()[0]).filename(), "w-01.pt");
  std::filesystem::remove_all(dir);
}

TEST(ModelCheckpoint, SavesEveryNBatchesWithTheBatchInTheName) {
  const auto dir = std::filesystem::temp_directory_path() / "fitscope_model_checkpoint_batches";
  std::filesystem::remove_all(dir);
  ModelCheckpointOptions o;
  o.filepath = (dir / "s-{epoch:02d}-{batch:02d}.fitscope").string();
  o.save_freq = 3;
  auto checkpoint = std::make_shared<ModelCheckpoint>(o);
  torch::manual_seed(0);
  Trainer trainer{torch::nn::Linear(4, 3)};
  FitOptions fit;
  fit.loader.workers = 0;
  fit.loader.batch_size = 2;
  fit.epochs = 2;
  fit.loader.shuffle = false;
  fit.callbacks = {checkpoint};
  trainer.fit(TensorDataset(torch::randn({8, 4}), torch::randint(3, {8}, torch::kLong)), fit);  // 4 steps an epoch
  std::vector<std::string> names;
  for (const auto& p : checkpoint->saved()) names.push_back(std::filesystem::path(p).filename().string());
  EXPECT_EQ(names, (std::vector<std::string>{"s-01-03.fitscope", "s-02-02.fitscope"}));  // global steps 3 and 6
  std::filesystem::remove_all(dir);
}
