#include <gtest/gtest.h>

#include <torch/nn/modules/linear.h>
#include <torch/utils.h>

#include <chrono>
#include <thread>

#include "fitscope/callbacks/callback.hpp"
#include "fitscope/train/trainer.hpp"

using namespace fitscope;

namespace {

/// Records every hook as "hook index [keys]".
class Recorder : public Callback {
 public:
  std::vector<std::string> calls;

  void on_train_begin(Logs& l) override { add("train_begin", -1, l); }
  void on_train_end(Logs& l) override { add("train_end", -1, l); }
  void on_epoch_begin(int64_t e, Logs& l) override { add("epoch_begin", e, l); }
  void on_epoch_end(int64_t e, Logs& l) override { add("epoch_end", e, l); }
  void on_train_batch_begin(int64_t b, Logs& l) override { add("train_batch_begin", b, l); }
  void on_train_batch_end(int64_t b, Logs& l) override { add("train_batch_end", b, l); }
  void on_test_begin(Logs& l) override { add("test_begin", -1, l); }
  void on_test_end(Logs& l) override { add("test_end", -1, l); }
  void on_test_batch_begin(int64_t b, Logs& l) override { add("test_batch_begin", b, l); }
  void on_test_batch_end(int64_t b, Logs& l) override { add("test_batch_end", b, l); }
  void on_predict_begin(Logs& l) override { add("predict_begin", -1, l); }
  void on_predict_end(Logs& l) override { add("predict_end", -1, l); }
  void on_predict_batch_begin(int64_t b, Logs& l) override { add("predict_batch_begin", b, l); }
  void on_predict_batch_end(int64_t b, Logs& l) override { add("predict_batch_end", b, l); }

 private:
  void add(const std::string& hook, int64_t index, const Logs& logs) {
    std::string s = hook;
    if (index >= 0) s += " " + std::to_string(index);
    s += " [";
    for (const auto& key : logs.keys()) s += (s.back() == '[' ? "" : ",") + key;
    calls.push_back(s + "]");
  }
};

struct TinyProblem {
  TensorDataset train;
  TensorDataset validation;
  TinyProblem() {
    torch::manual_seed(3);
    train = TensorDataset(torch::randn({10, 4}), torch::randint(3, {10}, torch::kLong));
    validation = TensorDataset(torch::randn({5, 4}), torch::randint(3, {5}, torch::kLong));
  }
};

const std::string kBatchKeys = "[loss,accuracy]";
const std::string kEpochKeys = "[loss,accuracy,val_loss,val_accuracy]";

std::vector<std::string> expected_epoch(int64_t epoch, int64_t train_batches, int64_t test_batches) {
  std::vector<std::string> out = {"epoch_begin " + std::to_string(epoch) + " []"};
  for (int64_t b = 0; b < train_batches; ++b) {
    out.push_back("train_batch_begin " + std::to_string(b) + " []");
    out.push_back("train_batch_end " + std::to_string(b) + " " + kBatchKeys);
  }
  out.push_back("test_begin []");
  for (int64_t b = 0; b < test_batches; ++b) {
    out.push_back("test_batch_begin " + std::to_string(b) + " []");
    out.push_back("test_batch_end " + std::to_string(b) + " " + kBatchKeys);
  }
  out.push_back("test_end " + kBatchKeys);
  out.push_back("epoch_end " + std::to_string(epoch) + " " + kEpochKeys);
  return out;
}

}  // namespace

TEST(HookOrder, FitCallsTheKerasHooksInKerasOrderWithValidationInsideEachEpoch) {
  TinyProblem p;
  Trainer trainer(torch::nn::Linear(4, 3));
  auto recorder = std::make_shared<Recorder>();
  FitOptions fit;
  fit.epochs = 2;
  fit.loader.batch_size = 4;  // 10 examples -> 3 batches; 5 validation examples -> 2 batches
  fit.validation_data = std::make_shared<TensorDataset>(p.validation);
  fit.callbacks = {recorder};
  trainer.fit(p.train, fit);

  std::vector<std::string> expected = {"train_begin []"};
  for (int64_t e = 0; e < 2; ++e) {
    const auto epoch = expected_epoch(e, 3, 2);
    expected.insert(expected.end(), epoch.begin(), epoch.end());
  }
  expected.push_back("train_end " + kEpochKeys);
  EXPECT_EQ(recorder->calls, expected);
}

TEST(HookOrder, EvaluateCallsOnlyTheTestHooks) {
  TinyProblem p;
  Trainer trainer(torch::nn::Linear(4, 3));
  auto recorder = std::make_shared<Recorder>();
  const Logs logs = trainer.evaluate(p.validation, {/*batch_size=*/2, {recorder}});
  EXPECT_EQ(recorder->calls,
            (std::vector<std::string>{"test_begin []", "test_batch_begin 0 []", "test_batch_end 0 " + kBatchKeys,
                                      "test_batch_begin 1 []", "test_batch_end 1 " + kBatchKeys,
                                      "test_batch_begin 2 []", "test_batch_end 2 " + kBatchKeys,
                                      "test_end " + kBatchKeys}));
  EXPECT_EQ(logs.keys(), (std::vector<std::string>{"loss", "accuracy"}));
}

TEST(HookOrder, PredictCallsOnlyThePredictHooksAndReturnsEveryOutput) {
  TinyProblem p;
  Trainer trainer(torch::nn::Linear(4, 3));
  auto recorder = std::make_shared<Recorder>();
  const at::Tensor out = trainer.predict(p.train.inputs(), {/*batch_size=*/6, {recorder}});
  EXPECT_EQ(out.sizes(), (std::vector<int64_t>{10, 3}));
  EXPECT_EQ(recorder->calls,
            (std::vector<std::string>{"predict_begin []", "predict_batch_begin 0 []", "predict_batch_end 0 []",
                                      "predict_batch_begin 1 []", "predict_batch_end 1 []", "predict_end []"}));
}

TEST(HookOrder, StopRequestedInABatchEndsTheEpochAfterThatBatchWithValidationAndEpochEnd) {
  TinyProblem p;
  Trainer trainer(torch::nn::Linear(4, 3));
  auto recorder = std::make_shared<Recorder>();
  LambdaCallback::Hooks hooks;
  hooks.on_train_batch_end = [&trainer](int64_t batch, const Logs&) {
    if (batch == 1) trainer.context().request_stop();
  };
  FitOptions fit;
  fit.epochs = 5;
  fit.loader.batch_size = 4;
  fit.validation_data = std::make_shared<TensorDataset>(p.validation);
  fit.callbacks = {std::make_shared<LambdaCallback>(hooks, "Stopper"), recorder};
  const History history = trainer.fit(p.train, fit);

  std::vector<std::string> expected = {"train_begin []", "epoch_begin 0 []",
                                       "train_batch_begin 0 []", "train_batch_end 0 " + kBatchKeys,
                                       "train_batch_begin 1 []", "train_batch_end 1 " + kBatchKeys,
                                       "test_begin []"};
  for (int64_t b = 0; b < 2; ++b) {
    expected.push_back("test_batch_begin " + std::to_string(b) + " []");
    expected.push_back("test_batch_end " + std::to_string(b) + " " + kBatchKeys);
  }
  expected.push_back("test_end " + kBatchKeys);
  expected.push_back("epoch_end 0 " + kEpochKeys);
  expected.push_back("train_end " + kEpochKeys);
  EXPECT_EQ(recorder->calls, expected);
  EXPECT_EQ(history.epochs(), (std::vector<int64_t>{0}));
  EXPECT_EQ(trainer.context().global_step(), 2);
}

TEST(HookOrder, BatchLogsAreLeftEmptyWhenNoCallbackReadsThem) {
  TinyProblem p;
  Trainer trainer(torch::nn::Linear(4, 3));
  struct Blind : Recorder {
    fitscope::CallbackTraits traits() const override { fitscope::CallbackTraits t; t.reads_batch_logs = false; return t; }
  };
  auto blind = std::make_shared<Blind>();
  FitOptions fit;
  fit.loader.batch_size = 5;
  fit.callbacks = {blind};
  trainer.fit(p.train, fit);
  EXPECT_EQ(blind->calls[3], "train_batch_end 0 []");
  EXPECT_EQ(blind->calls.back(), "train_end [loss,accuracy]");
}

TEST(HookOrder, PredictBatchHooksSeeTheBatchOutputsLikeKerasLogsOutputs) {
  Trainer trainer(torch::nn::Linear(4, 3));
  std::vector<int64_t> rows;
  LambdaCallback::Hooks hooks;
  std::shared_ptr<LambdaCallback> callback;  // the hooks read the context through it
  hooks.on_predict_batch_end = [&](int64_t, const Logs&) {
    const at::Tensor* outputs = callback->context().batch_outputs();
    rows.push_back(outputs ? outputs->size(0) : -1);
  };
  hooks.on_predict_end = [&](const Logs&) { rows.push_back(callback->context().batch_outputs() ? -2 : 0); };
  callback = std::make_shared<LambdaCallback>(hooks);
  PredictOptions o;
  o.batch_size = 4;
  o.callbacks = {callback};
  trainer.predict(torch::randn({10, 4}), o);
  EXPECT_EQ(rows, (std::vector<int64_t>{4, 4, 2, 0}));  // three batches' outputs; none outside the batch hook
}

TEST(HookOrder, AStopAskedInOnTrainBeginStillRunsOneBatchLikeKeras) {
  TinyProblem p;
  Trainer trainer(torch::nn::Linear(4, 3));
  LambdaCallback::Hooks hooks;
  hooks.on_train_begin = [&trainer](const Logs&) { trainer.context().request_stop(); };
  FitOptions fit;
  fit.epochs = 3;
  fit.callbacks = {std::make_shared<LambdaCallback>(hooks)};
  const History history = trainer.fit(p.train, fit);
  EXPECT_EQ(trainer.context().global_step(), 1);
  EXPECT_EQ(history.epochs().size(), 1u);  // the stopped epoch still ends: validation and on_epoch_end
}

TEST(HookOrder, ACallbackCanChangeTheLearningRateAndTheEpochLogsShowIt) {
  TinyProblem p;
  Trainer trainer(torch::nn::Linear(4, 3));
  LambdaCallback::Hooks hooks;
  hooks.on_epoch_begin = [&trainer](int64_t epoch, const Logs&) {
    trainer.context().set_learning_rate(0.1 / (epoch + 1));
  };
  hooks.on_epoch_end = [&trainer](int64_t, Logs& logs) { logs.set("learning_rate", trainer.context().learning_rate()); };
  FitOptions fit;
  fit.epochs = 2;
  fit.callbacks = {std::make_shared<LambdaCallback>(hooks)};
  const History history = trainer.fit(p.train, fit);
  EXPECT_EQ(history.at("learning_rate"), (std::vector<double>{0.1, 0.05}));
}

TEST(HookOrder, InitialEpochAndStepsPerEpochFollowKeras) {
  TinyProblem p;
  Trainer trainer(torch::nn::Linear(4, 3));
  auto recorder = std::make_shared<Recorder>();
  FitOptions fit;
  fit.epochs = 3;
  fit.initial_epoch = 1;
  fit.loader.batch_size = 4;
  fit.steps_per_epoch = 5;  // longer than one pass of 3 batches: continues into the next pass
  fit.callbacks = {recorder};
  const History history = trainer.fit(p.train, fit);
  EXPECT_EQ(history.epochs(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(trainer.context().global_step(), 10);
  EXPECT_EQ(recorder->calls[1], "epoch_begin 1 []");
  EXPECT_EQ(trainer.context().params().steps_per_epoch, 5);
}

TEST(HookOrder, AnAsyncCallbackSeesTheSameCallsInTheSameOrderAsASyncOne) {
  TinyProblem p;
  auto sync = std::make_shared<Recorder>();
  auto async = std::make_shared<Recorder>();
  async->set_async(true);
  FitOptions fit;
  fit.epochs = 2;
  fit.loader.batch_size = 3;
  fit.validation_data = std::make_shared<TensorDataset>(p.validation);
  fit.callbacks = {sync, async};
  Trainer trainer(torch::nn::Linear(4, 3));
  trainer.fit(p.train, fit);
  EXPECT_EQ(async->calls, sync->calls);
  trainer.evaluate(p.validation, {2, {sync, async}});
  trainer.predict(p.validation.inputs(), {2, {sync, async}});
  EXPECT_EQ(async->calls, sync->calls);
}

TEST(HookOrder, AnErrorInAnAsyncCallbackFailsTheRunWithTheCallbackAndHookNamed) {
  TinyProblem p;
  LambdaCallback::Hooks hooks;
  hooks.on_train_batch_end = [](int64_t batch, const Logs&) {
    if (batch == 1) throw std::runtime_error("cannot write predictions");
  };
  auto failing = std::make_shared<LambdaCallback>(hooks, "SavePredictions");
  failing->set_async(true);
  FitOptions fit;
  fit.epochs = 3;
  fit.loader.batch_size = 2;
  fit.callbacks = {failing};
  Trainer trainer(torch::nn::Linear(4, 3));
  try {
    trainer.fit(p.train, fit);
    FAIL() << "expected an exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "SavePredictions.on_train_batch_end failed: cannot write predictions");
  }
  EXPECT_LE(trainer.context().global_step(), 5);  // at the latest at the end of the first epoch
}

TEST(CallbackTiming, EveryCallbackAndHookIsCountedByNameAndMode) {
  TinyProblem p;
  auto recorder = std::make_shared<Recorder>();
  auto async = std::make_shared<Recorder>();
  async->set_async(true);
  FitOptions fit;
  fit.epochs = 2;
  fit.loader.batch_size = 4;  // 3 batches an epoch
  fit.callbacks = {recorder, async};
  Trainer trainer(torch::nn::Linear(4, 3));
  trainer.fit(p.train, fit);
  int found = 0;
  for (const auto& t : trainer.measured().callbacks) {
    EXPECT_EQ(t.name, "Recorder");
    if (t.hook == Hook::on_train_batch_end) {
      EXPECT_EQ(t.durations.count(), 6);
      EXPECT_EQ(t.mode, found == 0 ? "sync" : "async");
      ++found;
    }
    if (t.hook == Hook::on_epoch_end) EXPECT_EQ(t.durations.count(), 2);
    if (t.hook == Hook::on_train_begin) EXPECT_EQ(t.durations.count(), 1);
  }
  EXPECT_EQ(found, 2);
}

TEST(SlowCallbackWarning, NamesTheCallbackAndTheHookOnce) {
  TinyProblem p;
  LambdaCallback::Hooks hooks;
  hooks.on_train_batch_end = [](int64_t, const Logs&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // far above a step of a 4x3 Linear
  };
  std::vector<std::string> warnings;
  TrainerOptions options;
  options.warmup_steps = 2;
  options.warn = [&warnings](const std::string& w) { warnings.push_back(w); };
  Trainer trainer(torch::nn::Linear(4, 3), options);
  FitOptions fit;
  fit.epochs = 20;
  fit.loader.batch_size = 1;  // 200 steps: the check runs many times
  fit.callbacks = {std::make_shared<LambdaCallback>(hooks, "SavePredictions")};
  trainer.fit(p.train, fit);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings, trainer.measured().warnings);
  EXPECT_NE(warnings[0].find("callback SavePredictions.on_train_batch_end takes "), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("Callback::set_async(true)"), std::string::npos);
}
