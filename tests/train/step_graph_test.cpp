// The captured step (TrainerOptions::cuda_graph) on a CPU, through a stand-in capture that replays by
// running the recorded step again: the trial counts as warm-up, the captured step trains as eager
// does (each optimizer kind's device-only update), a replay that differs from eager is dropped with
// eager's result kept, a capture that fails and a step that cannot be captured run eagerly with their
// reasons, and a batch of another shape runs eagerly.

#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/optim/adam.h>
#include <torch/utils.h>

#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

#include "fitscope/callbacks/backup_and_restore.hpp"
#include "fitscope/data/sources/synthetic.hpp"
#include "fitscope/models/mlp.hpp"
#include "fitscope/train/trainer.hpp"
#include "train/step_graph.hpp"

using namespace fitscope;

namespace step_graph_test {

/// What the stand-in saw.
struct CaptureLog {
  int64_t stream_steps = 0, captures = 0, replays = 0;
};

/// Replays by running the recorded step again; optionally fails its capture, or spoils each replay's
/// weights (a replay that computes another function).
class ReplayByRunning : public StepCapture {
 public:
  ReplayByRunning(std::shared_ptr<CaptureLog> log, std::string failure, Model* spoil)
      : log_(std::move(log)), failure_(std::move(failure)), spoil_(spoil) {}
  void synchronize() override {}
  void run_on_capture_stream(const std::function<void()>& work) override {
    ++log_->stream_steps;
    work();
  }
  void capture(const std::function<void()>& step) override {
    if (!failure_.empty()) throw std::runtime_error(failure_);
    ++log_->captures;
    step_ = step;
  }
  void replay() override {
    ++log_->replays;
    step_();
    if (spoil_) {
      at::NoGradGuard no_grad;
      spoil_->parameters().front().add_(0.01);
    }
  }

 private:
  std::shared_ptr<CaptureLog> log_;
  std::string failure_;
  Model* spoil_;
  std::function<void()> step_;
};

/// The running loss at every batch end.
class LossesSeen : public Callback {
 public:
  std::vector<double> losses;
  void on_train_batch_end(int64_t, Logs& logs) override { losses.push_back(logs.at("loss")); }
};

struct Trained {
  std::vector<double> losses;
  std::vector<at::Tensor> weights;
  FitMeasurements measured;
  std::shared_ptr<CaptureLog> log = std::make_shared<CaptureLog>();
};

struct GraphSetup {
  CudaGraphMode mode = CudaGraphMode::on;
  OptimizerKind optimizer = OptimizerKind::adam;
  std::string failure;
  bool spoil = false;
  int64_t examples = 32 * 60;
  int64_t epochs = 1;
  std::function<void(TrainerOptions&)> change;
  std::vector<std::shared_ptr<Callback>> callbacks;
};

/// Throws at the given global step: the "crash".
struct CrashAt : Callback {
  explicit CrashAt(int64_t step) : step(step) {}
  void on_train_batch_end(int64_t, Logs&) override {
    if (context().global_step() + 1 == step) throw std::runtime_error("killed");
  }
  int64_t step;
};

Trained train_with_graph(const GraphSetup& s) {
  Trained out;
  torch::manual_seed(0);
  auto model = make_model(models::Mlp());
  TrainerOptions options;
  options.optimizer = s.optimizer;
  if (s.optimizer == OptimizerKind::sgd) {
    options.momentum = 0.9;
    options.nesterov = true;
    options.weight_decay = 1e-3;
  }
  options.fused_optimizer = false;  // libtorch's optimizer, as on a GPU
  options.threads.intra_op = 1;     // no thread search
  options.warmup_steps = 2;
  options.cuda_graph = s.mode;
  Model* spoiled = s.spoil ? model.get() : nullptr;
  options.step_capture = [log = out.log, failure = s.failure, spoiled] {
    return std::make_unique<ReplayByRunning>(log, failure, spoiled);
  };
  std::vector<std::string> warnings;
  options.warn = [&warnings](const std::string& w) { warnings.push_back(w); };
  if (s.change) s.change(options);
  Trainer trainer(model, options);
  auto seen = std::make_shared<LossesSeen>();
  FitOptions fit;
  fit.loader.batch_size = 32;
  fit.loader.shuffle = false;
  fit.epochs = s.epochs;
  fit.callbacks = s.callbacks;
  fit.callbacks.push_back(seen);
  SyntheticOptions data;
  data.size = s.examples;
  trainer.fit(make_synthetic(data), fit);
  out.losses = seen->losses;
  for (const at::Tensor& p : model->parameters()) out.weights.push_back(p.detach().clone());
  out.measured = trainer.measured();
  return out;
}

double relative_difference(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  double difference = 0, norm = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    difference += (a[i] - b[i]).pow(2).sum().item<double>();
    norm += b[i].pow(2).sum().item<double>();
  }
  return std::sqrt(difference / norm);
}

void expect_same_training(const Trained& a, const Trained& b, const std::string& what) {
  ASSERT_EQ(a.losses.size(), b.losses.size()) << what;
  for (std::size_t i = 0; i < a.losses.size(); ++i) {
    EXPECT_NEAR(a.losses[i], b.losses[i], 1e-5 * std::abs(b.losses[i])) << what << ", batch " << i;
  }
  EXPECT_LT(relative_difference(a.weights, b.weights), 1e-5) << what;
}

}  // namespace step_graph_test

using namespace step_graph_test;

TEST(StepGraph, TheCapturedStepTrainsAsEagerDoesForEveryOptimizerKind) {
  for (OptimizerKind kind : {OptimizerKind::adam, OptimizerKind::adamw, OptimizerKind::sgd}) {
    GraphSetup eager;
    eager.mode = CudaGraphMode::off;
    eager.optimizer = kind;
    GraphSetup captured = eager;
    captured.mode = CudaGraphMode::on;
    const Trained e = train_with_graph(eager), c = train_with_graph(captured);
    const std::string name = optimizer_name(kind);
    expect_same_training(c, e, name);
    const CudaGraphOutcome& g = c.measured.cuda_graph;
    EXPECT_TRUE(g.tried) << name;
    EXPECT_TRUE(g.kept) << name << ": " << g.reason;
    EXPECT_EQ(g.reason.rfind("on: kept (replay", 0), 0u) << g.reason;
    EXPECT_EQ(g.checked_steps, fitscope::detail::StepGraph::kChecks);
    EXPECT_LE(g.max_loss_difference, fitscope::detail::StepGraph::kTolerance);
    EXPECT_EQ(c.log->stream_steps, fitscope::detail::StepGraph::kCaptureStreamSteps);
    EXPECT_EQ(c.log->captures, 1);
    // 60 steps: 2 of warm-up, the trial (53), then replays; every replay but the checks' trains a step
    EXPECT_EQ(c.log->replays, g.replayed_steps + g.checked_steps);
    EXPECT_GT(g.replayed_steps, 10) << name;
    EXPECT_EQ(g.eager_steps, 0);
    // the trial's steps are warm-up; the replayed steps have their phase, and no forward of their own
    const PhaseStats& stats = c.measured.stats;
    EXPECT_EQ(stats.warmup_steps(), 2 + g.trial_steps);
    EXPECT_EQ(stats.measured_steps(), 60 - 2 - g.trial_steps);
    EXPECT_GT(stats.phase(Phase::graph).mean_ms, 0);
    EXPECT_EQ(e.measured.stats.phase(Phase::graph).mean_ms, 0);
    EXPECT_EQ(e.measured.cuda_graph.reason, "off (TrainerOptions::cuda_graph)");
    EXPECT_FALSE(e.measured.cuda_graph.tried);
  }
}

TEST(StepGraph, AutoTimesReplayAgainstEagerAndSaysWhichItKept) {
  GraphSetup s;
  s.mode = CudaGraphMode::automatic;
  s.examples = 32 * 100;  // the trial: 8 eager steps, 2 on the capture stream, the capture, 2 checks, 48 timed
  const Trained t = train_with_graph(s);
  const CudaGraphOutcome& g = t.measured.cuda_graph;
  EXPECT_TRUE(g.tried);
  EXPECT_GT(g.eager_ms, 0);
  EXPECT_GT(g.graph_ms, 0);
  // the stand-in's replay is the eager step and two copies: whichever the windows found faster is said
  if (g.kept) {
    EXPECT_EQ(g.reason.rfind("launch-bound: kept, replay", 0), 0u) << g.reason;
  } else {
    EXPECT_EQ(g.reason.rfind("not faster: replay", 0), 0u) << g.reason;
  }
}

TEST(StepGraph, AReplayThatDiffersFromEagerIsDroppedAndEagersResultKept) {
  GraphSetup eager;
  eager.mode = CudaGraphMode::off;
  GraphSetup spoiled;
  spoiled.spoil = true;
  const Trained e = train_with_graph(eager), s = train_with_graph(spoiled);
  const CudaGraphOutcome& g = s.measured.cuda_graph;
  EXPECT_TRUE(g.tried);
  EXPECT_FALSE(g.kept);
  EXPECT_EQ(g.reason.rfind("a replay differs from eager on the same batch", 0), 0u) << g.reason;
  EXPECT_EQ(g.checked_steps, 1);
  EXPECT_GT(g.max_weight_difference, fitscope::detail::StepGraph::kTolerance);
  // the first replay (the capture's own batch) was spoiled; the check restored and ran eagerly after it
  EXPECT_EQ(s.log->replays, 2);
  EXPECT_TRUE(std::any_of(s.measured.warnings.begin(), s.measured.warnings.end(),
                          [](const std::string& w) { return w.find("cuda_graph is on, but the steps ran eagerly") != std::string::npos; }));
}

TEST(StepGraph, ACaptureThatFailsRunsEagerlyWithTheReason) {
  GraphSetup eager;
  eager.mode = CudaGraphMode::off;
  GraphSetup failing;
  failing.failure = "operation not permitted when stream is capturing\nbacktrace...";
  const Trained e = train_with_graph(eager), f = train_with_graph(failing);
  const CudaGraphOutcome& g = f.measured.cuda_graph;
  EXPECT_TRUE(g.tried);
  EXPECT_FALSE(g.kept);
  EXPECT_EQ(g.reason, "the step could not be captured: operation not permitted when stream is capturing");
  EXPECT_EQ(f.log->replays, 0);
  expect_same_training(f, e, "after a failed capture");
}

TEST(StepGraph, ABatchOfAnotherShapeRunsEagerly) {
  GraphSetup s;
  s.examples = 32 * 30 + 7;  // a partial last batch each epoch
  s.epochs = 2;
  GraphSetup eager = s;
  eager.mode = CudaGraphMode::off;
  const Trained t = train_with_graph(s), e = train_with_graph(eager);
  const CudaGraphOutcome& g = t.measured.cuda_graph;
  EXPECT_TRUE(g.kept) << g.reason;
  EXPECT_EQ(g.eager_steps, 1);  // the trial spans the first epoch's end; the second's partial batch ran eagerly
  expect_same_training(t, e, "with partial batches");
}

TEST(StepGraph, WhatCannotBeCapturedRunsEagerlyWithItsReason) {
  const std::vector<std::pair<std::function<void(TrainerOptions&)>, std::string>> cases = {
      {[](TrainerOptions& o) { o.accumulate = 2; }, "with gradient accumulation the weights change on some batches only"},
      {[](TrainerOptions& o) { o.clipping.max_norm = 1; }, "gradient clipping reads the gradients' norm on the host"},
      {[](TrainerOptions& o) { o.precision = Precision::bfloat16; }, "bfloat16 autocast is not captured"},
      {[](TrainerOptions& o) {
         o.train_step = [](const Batch& b, StepContext& c) { return standard_train_step(b, c); };
       },
       "a custom train step (TrainerOptions::train_step) runs as written"},
      {[](TrainerOptions& o) { o.step_capture = nullptr; }, "CUDA graphs need a CUDA device and a libtorch with CUDA"},
  };
  for (const auto& [change, reason_] : cases) {
    const std::string& reason = reason_;
    GraphSetup s;
    s.examples = 32 * 8;
    s.change = change;
    const Trained t = train_with_graph(s);
    EXPECT_FALSE(t.measured.cuda_graph.tried) << reason;
    EXPECT_EQ(t.measured.cuda_graph.reason, reason);
    EXPECT_EQ(t.log->captures, 0);
    EXPECT_TRUE(std::any_of(t.measured.warnings.begin(), t.measured.warnings.end(), [&](const std::string& w) {
      return w == "TrainerOptions::cuda_graph is on, but every step runs eagerly: " + reason;
    })) << reason;
  }
}

TEST(StepGraph, AFitShorterThanTheTrialSaysSo) {
  GraphSetup s;
  s.examples = 32 * 12;
  const Trained t = train_with_graph(s);
  EXPECT_EQ(t.measured.cuda_graph.reason.rfind("the fit ended 10 steps into the trial", 0), 0u) << t.measured.cuda_graph.reason;
}

TEST(StepGraph, ARunResumedFromABackupTakenBetweenReplaysEndsAsAnUninterruptedOne) {
  // 4 epochs of 40 steps; the replays start after step 55 (2 of warm-up, 53 of trial); a backup every
  // 7 steps, a crash at the end of step 70 (before its backup): the backup at 63 holds weights and
  // optimizer state (the step counts too) that replays updated; the resumed fit replays again after
  // its own trial
  const std::string dir = "/tmp/fitscope-step-graph-resume-" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  BackupAndRestoreOptions backup;
  backup.backup_dir = dir;
  backup.save_freq = 7;
  backup.warn = [](const std::string&) {};
  GraphSetup s;
  s.examples = 32 * 40;
  s.epochs = 4;
  const Trained uninterrupted = train_with_graph(s);
  ASSERT_TRUE(uninterrupted.measured.cuda_graph.kept) << uninterrupted.measured.cuda_graph.reason;
  GraphSetup crashing = s;
  crashing.callbacks = {std::make_shared<BackupAndRestore>(backup), std::make_shared<CrashAt>(71)};
  EXPECT_THROW(train_with_graph(crashing), std::runtime_error);
  GraphSetup resuming = s;
  auto restore = std::make_shared<BackupAndRestore>(backup);
  resuming.callbacks = {restore};
  const Trained resumed = train_with_graph(resuming);
  EXPECT_EQ(restore->restored_step(), 63);
  EXPECT_TRUE(resumed.measured.cuda_graph.kept) << resumed.measured.cuda_graph.reason;  // a new trial after the resume
  EXPECT_LT(relative_difference(resumed.weights, uninterrupted.weights), 1e-5);
  std::filesystem::remove_all(dir);
}

TEST(StepGraph, AutoLeavesAStepThatKeepsTheDeviceBusyEager) {
  // the trial driven directly, the device's own work per step given: busy for the whole step, then idle
  for (const double busy_ms : {1e9, 0.0}) {
    torch::manual_seed(0);
    auto model = make_model(models::Mlp());
    torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(1e-3));
    StepClock clock;
    StepContext context{*model, optimizer, Loss::cross_entropy, clock};
    auto log = std::make_shared<CaptureLog>();
    fitscope::detail::StepGraph graph(CudaGraphMode::automatic, std::make_unique<ReplayByRunning>(log, "", nullptr), "",
                                      OptimizerKind::adam, standard_train_step, /*start_at=*/0,
                                      [busy_ms] { return std::optional<double>(busy_ms); });
    const Batch batch{at::randn({32, 1, 28, 28}), at::randint(0, 10, {32}, at::kLong)};
    for (int64_t i = 0; i < fitscope::detail::StepGraph::kWindow + 4; ++i) {
      clock.begin_step(0, i);
      graph.step(batch, context, true);
      clock.end_step();
    }
    const CudaGraphOutcome g = graph.outcome();
    if (busy_ms > 0) {
      EXPECT_EQ(g.reason.rfind("not launch-bound: the device's own work is 1000000000.000 ms of the", 0), 0u) << g.reason;
      EXPECT_FALSE(g.tried);
      EXPECT_EQ(log->stream_steps, 0);
      EXPECT_EQ(g.device_busy_ms, busy_ms);
    } else {
      EXPECT_TRUE(g.tried) << g.reason;  // launch-bound: on to the capture stream and the capture
      EXPECT_EQ(log->stream_steps, fitscope::detail::StepGraph::kCaptureStreamSteps);
      EXPECT_EQ(log->captures, 1);
    }
  }
}

TEST(CudaGraphMode, NamesReadBackAndAnUnknownOneIsRefusedByName) {
  for (CudaGraphMode m : {CudaGraphMode::automatic, CudaGraphMode::on, CudaGraphMode::off}) {
    EXPECT_EQ(parse_cuda_graph_mode(cuda_graph_mode_name(m)), m);
  }
  try {
    parse_cuda_graph_mode("sometimes");
    FAIL() << "accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "cuda graph mode 'sometimes' (expected auto, on or off)");
  }
}
