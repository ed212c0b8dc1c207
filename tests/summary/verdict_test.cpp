#include <gtest/gtest.h>

#include "fitscope/summary/verdict.hpp"
#include "summary/thread_choice_text.hpp"

using namespace fitscope;

namespace {

/// Stats of identical steps with the given phase times (ns).
PhaseStats steps_with(std::initializer_list<std::pair<Phase, int64_t>> phases) {
  StepRecord r;
  for (const auto& [p, ns] : phases) {
    r.phase_ns[static_cast<std::size_t>(p)] = ns;
    r.step_ns += ns;
  }
  PhaseStats stats(0);
  for (int i = 0; i < 20; ++i) stats.add(r);
  return stats;
}

}  // namespace

TEST(Verdict, CallsARunWithMostlyDataWaitHighlyInputBoundAndNamesTheWorkersKnob) {
  VerdictContext ctx;
  ctx.loader.workers = 1;
  const Verdict v = judge(steps_with({{Phase::data_wait, 600}, {Phase::forward, 400}}), ctx);
  EXPECT_EQ(v.bound, "input");
  EXPECT_EQ(v.level, "highly");
  EXPECT_NEAR(v.share, 0.6, 1e-9);
  EXPECT_NE(v.advice.find("raise LoaderOptions::workers from 1 to 2"), std::string::npos) << v.advice;
  ASSERT_EQ(v.actions.size(), 1u);  // the same advice as data
  EXPECT_EQ(v.actions[0].knob, "LoaderOptions::workers");
  EXPECT_EQ(v.actions[0].from, "1");
  EXPECT_EQ(v.actions[0].to, "2");
}

TEST(Verdict, UsesTheModerateThresholds) {
  const Verdict input = judge(steps_with({{Phase::data_wait, 6}, {Phase::forward, 94}}), {});
  EXPECT_EQ(input.bound, "input");
  EXPECT_EQ(input.level, "moderately");
  const Verdict overhead = judge(steps_with({{Phase::other, 4}, {Phase::forward, 96}}), {});
  EXPECT_EQ(overhead.bound, "overhead");
  EXPECT_EQ(overhead.level, "moderately");
}

TEST(Verdict, PrefersTheMoreSevereCategory) {
  // input 10 % (moderately), callbacks 16 % (moderately), overhead 16 % (highly at 15 %)
  const Verdict v = judge(
      steps_with({{Phase::data_wait, 10}, {Phase::callbacks, 16}, {Phase::other, 16}, {Phase::forward, 58}}), {});
  EXPECT_EQ(v.bound, "overhead");
  EXPECT_EQ(v.level, "highly");
}

TEST(Verdict, CallsARunWithoutOverheadsComputeBound) {
  const Verdict v = judge(steps_with({{Phase::forward, 50}, {Phase::backward, 48}, {Phase::other, 2}}), {});
  EXPECT_EQ(v.bound, "compute");
  EXPECT_EQ(v.level, "highly");
  EXPECT_NEAR(v.share, 0.98, 1e-9);
}

/// With the layers' operations and the machine's peak, a compute-bound verdict says how close the math
/// comes to the machine, and what takes the time when it is far.
TEST(Verdict, AComputeBoundStepFarBelowTheMeasuredPeakSaysSoAndNamesItsLargestLayer) {
  VerdictContext ctx;
  ctx.threads.cores = 2;
  ctx.threads.setting = {2, 1};
  ctx.layers.probed_steps = 1;
  ctx.layers.forward_phase_ns = 8'000'000;
  ctx.layers.backward_phase_ns = 2'000'000;
  ctx.layers.layers = {{"dense", 1'000'000, 1'000'000, 2e8, 4e8}, {"(model) max_pool2d", 6'000'000, 1'000'000, 0, 0}};
  ctx.peak = MachinePeak{300, 30, 2, "k", false};
  ctx.forward_backward_ms = 10;  // 0.6 GFLOP in 10 ms: 60 GFLOP/s, 20 % of 300
  const Verdict v = judge(steps_with({{Phase::forward, 8}, {Phase::backward, 2}}), ctx);
  EXPECT_EQ(v.bound, "compute");
  EXPECT_NE(v.advice.find("(0.6 GFLOP a step) run at 60.0 GFLOP/s in forward and backward: 20% of this machine's measured "
                          "300.0 GFLOP/s (a matrix product on 2 cores)"),
            std::string::npos) << v.advice;
  EXPECT_NE(v.advice.find("the most time: (model) max_pool2d, 70% of forward and backward, with no matrix math"), std::string::npos)
      << v.advice;
  EXPECT_NE(v.advice.find("more than a faster device"), std::string::npos) << v.advice;
  ctx.peak->gemm_gflops = 100;  // 60 % of the peak: the arithmetic itself
  EXPECT_NE(judge(steps_with({{Phase::forward, 8}, {Phase::backward, 2}}), ctx).advice.find(": arithmetic bounds it"),
            std::string::npos);
  ctx.peak.reset();  // no peak, no such sentence
  EXPECT_EQ(judge(steps_with({{Phase::forward, 8}, {Phase::backward, 2}}), ctx).advice.find("GFLOP"), std::string::npos);
}

TEST(Verdict, CallsNoBoundWhenNothingWasMeasured) {
  const Verdict v = judge(PhaseStats(5), {});
  EXPECT_EQ(v.level, "unjudged");
  EXPECT_EQ(verdict_headline(v, 0), "too short to judge (0 measured steps)");
  EXPECT_EQ(v.advice.rfind("no step was measured after the warm-up", 0), 0u) << v.advice;
}

namespace {

VerdictContext threads_on(int64_t cores, ThreadSetting setting, const std::string& chosen_by = "flag") {
  VerdictContext ctx;
  ctx.threads.cores = cores;
  ctx.threads.setting = setting;
  ctx.threads.chosen_by = chosen_by;
  return ctx;
}

const PhaseStats& compute_bound() {
  static const PhaseStats stats = steps_with({{Phase::forward, 50}, {Phase::backward, 50}});
  return stats;
}

}  // namespace

TEST(Verdict, NamesNestedPoolsAsContentionAndTheFlagThatEndsIt) {
  const Verdict v = judge(compute_bound(), threads_on(2, {2, 2}));
  EXPECT_NE(v.contention.find("each of the 2 intra-op threads calls a BLAS pool of 2 threads: up to 4 busy threads on 2 cores"),
            std::string::npos) << v.contention;
  EXPECT_NE(v.contention.find("set ThreadOptions::blas to 1"), std::string::npos) << v.contention;
}

TEST(Verdict, NamesMoreIntraOpThreadsThanCores) {
  const Verdict v = judge(compute_bound(), threads_on(2, {4, 1}));
  EXPECT_NE(v.contention.find("4 intra-op threads on 2 cores"), std::string::npos) << v.contention;
  EXPECT_NE(v.contention.find("set ThreadOptions::intra_op to 2"), std::string::npos) << v.contention;
}

TEST(Verdict, NamesABlasPoolThatSpinsOutsideThePolicy) {
  VerdictContext ctx = threads_on(2, {1, 1});
  ctx.cpu.process_cores = 1.9;
  ctx.cpu.pools = {{"training", 1, 1.0}, {"blas", 1, 0.9}, {"other", 0, 0.0}};
  const Verdict v = judge(compute_bound(), ctx);
  EXPECT_NE(v.contention.find("the BLAS pool kept 0.90 cores busy although it is set to 1 thread"), std::string::npos)
      << v.contention;
}

TEST(Verdict, AComputeBoundRunWithAnIdleCoreSaysWhatTheWarmupMeasuredInsteadOfAdvisingADevice) {
  VerdictContext ctx = threads_on(2, {1, 1}, "auto");
  ctx.threads.candidates = {{{1, 1}, 10.0}, {{2, 1}, 12.5}, {{1, 2}, 11.0}};
  ctx.cpu.process_cores = 1.1;
  ctx.cpu.pools = {{"training", 1, 1.0}, {"other", 0, 0.0}};
  const Verdict v = judge(compute_bound(), ctx);
  EXPECT_EQ(v.bound, "compute");
  EXPECT_EQ(v.advice.find("faster device"), std::string::npos) << v.advice;
  EXPECT_NE(v.contention.find("intra-op threads 1 of 2 cores, 1.10 busy: ThreadOptions::intra_op 2 ran the warm-up steps 1.25x slower"),
            std::string::npos) << v.contention;
}

TEST(Verdict, NamesTheCgroupQuotaWhenItHeldTheProcessBackForAShareOfTheRun) {
  VerdictContext ctx = threads_on(1, {1, 1});
  ctx.run.training_steps = 20;
  ctx.cpu.throttled_periods = 30;
  ctx.cpu.throttled_s = 1.6;  // 8 % of the run
  const Verdict v = judge(compute_bound(), ctx);
  EXPECT_NE(v.contention.find("the cgroup's CPU quota held the process back in 30 periods, 1.60 s in all (8% of the run)"),
            std::string::npos) << v.contention;
  EXPECT_NE(v.contention.find("within the quota's 1 core ("), std::string::npos) << v.contention;
  ctx.cpu.throttled_s = 0.2;  // 1 %: the stalls are not what the run's time went to
  EXPECT_EQ(judge(compute_bound(), ctx).contention.find("quota"), std::string::npos);
  ctx.cpu.throttled_s = 1.5;
  ctx.run = {};  // no run measured: no share to judge by
  EXPECT_EQ(judge(compute_bound(), ctx).contention.find("quota"), std::string::npos);
}

TEST(Verdict, NamesOtherProcessesThatKeptThisProcesssCoresBusyAndOnlyThen) {
  VerdictContext ctx = threads_on(2, {2, 1});
  ctx.cpu.cores = 2;
  ctx.cpu.process_cores = 0.4;
  ctx.cpu.pools = {{"training", 1, 0.2}, {"intra_op", 1, 0.2}, {"other", 0, 0.0}};
  ctx.cpu.others_cores = 1.5;  // a build beside the run
  const Verdict loaded = judge(compute_bound(), ctx);
  EXPECT_NE(loaded.contention.find("other processes kept 1.50 cores busy on the 2 this process may use (its own threads 0.40)"),
            std::string::npos) << loaded.contention;
  EXPECT_EQ(loaded.machine, loaded.contention);
  ctx.cpu.others_cores = 0.1;  // a quiet machine
  EXPECT_EQ(judge(compute_bound(), ctx).contention.find("other processes"), std::string::npos);
  EXPECT_EQ(judge(compute_bound(), ctx).machine, "");
  // the machine's load and the process's own oversubscription, both named
  ctx.threads.setting = {4, 1};
  ctx.cpu.others_cores = 1.5;
  const Verdict both = judge(compute_bound(), ctx);
  EXPECT_EQ(both.contention.find("other processes kept 1.50 cores busy"), 0u) << both.contention;
  EXPECT_NE(both.contention.find("; besides, 4 intra-op threads on 2 cores"), std::string::npos) << both.contention;
  EXPECT_EQ(both.machine.find("other processes kept 1.50 cores busy"), 0u) << both.machine;  // the machine's load alone
  EXPECT_EQ(both.machine.find("besides"), std::string::npos) << both.machine;
  ctx.threads.setting = {2, 1};
  ctx.cpu.others_cores = 0.1;
  ctx.cpu.others_cores = -1;  // /proc/stat not read
  EXPECT_EQ(judge(compute_bound(), ctx).contention.find("other processes"), std::string::npos);
  // the run's own other rank on this machine is not a competing load
  ctx.ranks_on_machine = 2;
  ctx.threads.cores = 1;
  ctx.cpu.others_cores = 0.8;  // 0.4 of them the other rank's
  EXPECT_EQ(judge(compute_bound(), ctx).contention.find("other processes"), std::string::npos);
}

TEST(Verdict, TheThreadChoiceSaysWhyASlowerSettingWasKept) {
  ThreadChoice t;
  t.chosen_by = "auto";
  t.cores = 2;
  t.setting = {1, 2};
  t.candidates = {{{1, 2}, 0.058}, {{1, 1}, 0.056}};
  EXPECT_EQ(fitscope::detail::kept_reason(t),
            "kept intra-op 1, BLAS 2: within 4% of the fastest (intra-op 1, BLAS 1: 0.056 ms against 0.058 ms) and "
            "measured before it; a later setting replaces an earlier one only when 5% faster");
  t.setting = {1, 1};
  EXPECT_EQ(fitscope::detail::kept_reason(t), "kept intra-op 1, BLAS 1: the fastest");
  t.candidates = {{{1, 1}, 0.056}, {{2, 1}, 0.040}};
  t.setting = {2, 1};
  EXPECT_EQ(fitscope::detail::kept_reason(t), "kept intra-op 2, BLAS 1: the fastest, 1.40x faster than intra-op 1, BLAS 1");
  t.candidates.clear();
  EXPECT_EQ(fitscope::detail::kept_reason(t), "");
}

TEST(Verdict, AComputeBoundRunOnEveryCoreNamesTheMeasuredGainAndOnlyThenTheModelOrDevice) {
  VerdictContext ctx = threads_on(2, {2, 1}, "auto");
  ctx.threads.candidates = {{{1, 1}, 14.5}, {{2, 1}, 10.0}, {{1, 2}, 13.0}};
  ctx.cpu.process_cores = 1.95;
  ctx.cpu.pools = {{"training", 1, 1.0}, {"intra_op", 1, 0.95}, {"other", 0, 0.0}};
  const Verdict v = judge(compute_bound(), ctx);
  EXPECT_NE(v.advice.find("intra-op 2, BLAS 1 on 2 cores (measured in warm-up, kept intra-op 2, BLAS 1: the fastest, 1.45x faster than intra-op 1, BLAS 1)"),
            std::string::npos) << v.advice;
  EXPECT_NE(v.advice.find("every core computes"), std::string::npos) << v.advice;
  EXPECT_TRUE(v.contention.empty()) << v.contention;
}

TEST(Verdict, ARunWithTooFewMeasuredStepsIsTooShortToJudge) {
  PhaseStats few(0);
  for (int i = 0; i < kMinJudgedSteps - 1; ++i) {
    StepRecord r;
    r.step_ns = 1'000'000;
    r.samples = 32;
    r.phase_ns[static_cast<std::size_t>(Phase::data_wait)] = 900'000;  // it would read as input-bound
    r.phase_ns[static_cast<std::size_t>(Phase::forward)] = 100'000;
    few.add(r);
  }
  const Verdict v = judge(few, {});
  EXPECT_EQ(v.level, "unjudged");
  EXPECT_EQ(verdict_headline(v, few.measured_steps()), "too short to judge (9 measured steps)");
  EXPECT_NE(v.advice.find("only 9 steps were measured after the warm-up"), std::string::npos) << v.advice;
  EXPECT_TRUE(v.actions.empty());  // no change is advised on too few steps
}

TEST(Verdict, InputAdviceFitsTheDataSourceImageAdviceOnlyForImages) {
  VerdictContext ctx;
  ctx.loader.workers = 2;
  ctx.loader.auto_workers = true;
  ctx.loader.batch_build_ms = 2;
  ctx.loader.batch_build_cpu_ms = 2;  // the builds compute
  const PhaseStats waiting = steps_with({{Phase::data_wait, 600}, {Phase::forward, 400}});
  const Verdict in_memory = judge(waiting, ctx);
  EXPECT_EQ(in_memory.advice.find("ImageFolderOptions"), std::string::npos) << in_memory.advice;
  EXPECT_NE(in_memory.advice.find("cores of batch building"), std::string::npos) << in_memory.advice;
  ctx.decodes_images = true;
  const Verdict images = judge(waiting, ctx);
  EXPECT_NE(images.advice.find("a smaller ImageFolderOptions::height and width"), std::string::npos) << images.advice;
}

TEST(Verdict, BatchesBuiltOnTheTrainingThreadAreAdvisedAsAGatherNotAsSlowStorage) {
  // workers auto chose 0: a batch of in-memory examples built faster than a worker could hand it over
  VerdictContext ctx;
  ctx.batch_size = 32;
  ctx.loader.workers = 0;
  ctx.loader.auto_workers = true;
  ctx.loader.batch_build_ms = 0;  // no worker built a batch
  ctx.loader.changes.push_back({0, 0, 0, 0, "workers 0 (auto): a batch builds in 0.013 ms, less than handing one over costs"});
  const Verdict v = judge(steps_with({{Phase::data_wait, 19}, {Phase::forward, 81}}), ctx);
  EXPECT_EQ(v.bound, "input");
  EXPECT_NE(v.advice.find("built on the training thread (auto: a batch builds in 0.013 ms"), std::string::npos) << v.advice;
  EXPECT_EQ(v.advice.find("LoaderOptions::delay_ms"), std::string::npos) << v.advice;  // nothing sleeps
  EXPECT_EQ(v.advice.find("LoaderOptions::cache"), std::string::npos) << v.advice;     // nothing is read
  ASSERT_EQ(v.actions.size(), 1u);
  EXPECT_EQ(v.actions[0].knob, "LoaderOptions::batch_size");
  EXPECT_EQ(v.actions[0].from, "32");
  EXPECT_EQ(v.actions[0].to, "64");
}

TEST(Verdict, CallsAGpuStepLaunchBoundWhenTheDeviceIdlesForTheHostAndOnlyWhenThatWasMeasured) {
  const PhaseStats compute = steps_with({{Phase::forward, 500'000}, {Phase::backward, 500'000}});  // a 1 ms step
  VerdictContext unmeasured;
  unmeasured.batch_size = 32;
  EXPECT_EQ(judge(compute, unmeasured).bound, "compute");  // no probe: no launch bound
  VerdictContext busy = unmeasured;
  busy.device_busy_ms = 0.8;
  busy.device_idle_fraction = 0.2;
  EXPECT_EQ(judge(compute, busy).bound, "compute");  // under the moderate 30 %
  VerdictContext idle = unmeasured;
  idle.device_busy_ms = 0.1;
  idle.device_idle_fraction = 0.9;
  const Verdict v = judge(compute, idle);
  EXPECT_EQ(v.bound, "launch");
  EXPECT_EQ(v.level, "highly");
  EXPECT_NEAR(v.share, 0.9, 1e-9);
  EXPECT_NE(v.advice.find("its own work 0.100 ms of a 1.000 ms step"), std::string::npos) << v.advice;
  EXPECT_NE(v.advice.find("up to 10.0x"), std::string::npos) << v.advice;
  ASSERT_EQ(v.actions.size(), 1u);
  EXPECT_EQ(v.actions[0].knob, "LoaderOptions::batch_size");
  EXPECT_EQ(v.actions[0].to, "512");  // the first doubling at or past 10x the batch: 32 -> 512
  VerdictContext moderately = idle;
  moderately.device_idle_fraction = 0.4;
  EXPECT_EQ(judge(compute, moderately).level, "moderately");
}

TEST(Verdict, OnABusyGpuAHostWaitIsHiddenBehindTheDevicesWorkAndTheRunIsComputeBound) {
  // the host waits for data half of each 2 ms step while the GPU computes the step before: busy 99.9 %
  const PhaseStats waits = steps_with({{Phase::data_wait, 1'000'000}, {Phase::forward, 500'000}, {Phase::backward, 500'000}});
  VerdictContext on_cpu;
  EXPECT_EQ(judge(waits, on_cpu).bound, "input");  // on the CPU the wait is the step's
  VerdictContext busy_gpu;
  busy_gpu.device_busy_ms = 1.998;
  busy_gpu.device_idle_fraction = 0.001;
  const Verdict v = judge(waits, busy_gpu);
  EXPECT_EQ(v.bound, "compute");
  EXPECT_EQ(v.level, "highly");
  EXPECT_NEAR(v.share, 0.999, 1e-9);
  EXPECT_NE(v.advice.find("the GPU's own work takes 100% of each step (1.998 ms of a 2.000 ms step)"), std::string::npos)
      << v.advice;
  // a GPU idle 40 % of a step whose host waits half of it for data: input, counted at the idle 40 %
  VerdictContext starved = busy_gpu;
  starved.device_busy_ms = 1.2;
  starved.device_idle_fraction = 0.4;
  const Verdict input = judge(waits, starved);
  EXPECT_EQ(input.bound, "input");
  EXPECT_NEAR(input.share, 0.4, 1e-9);
}

namespace verdict_test {
/// A rank's straggling: chronic (in most steps) or now and then, its phase's time and the others', its
/// busy time and the others'.
StragglerCause straggling(int64_t rank, bool chronic, Phase phase, double phase_ms, double peers_phase_ms, double busy_ms,
                          double peers_busy_ms) {
  StragglerCause c;
  c.rank = rank;
  c.chronic = chronic;
  c.phase = phase;
  c.phase_ms = phase_ms;
  c.peers_phase_ms = peers_phase_ms;
  c.busy_ms = busy_ms;
  c.peers_busy_ms = peers_busy_ms;
  return c;
}
}  // namespace verdict_test

TEST(Verdict, NamesTheRankTheOthersWaitForAndItsPhaseNotTheCommunication) {
  using verdict_test::straggling;
  // the chief (rank 0) waits 5 ms of its 10 ms step in comm for rank 1, whose backward takes 5 ms more
  const PhaseStats chief = steps_with({{Phase::forward, 2'000'000}, {Phase::backward, 3'000'000}, {Phase::comm, 5'000'000}});
  VerdictContext ctx;
  ctx.stragglers = {straggling(1, true, Phase::backward, 8.0, 3.0, 10.0, 5.0)};
  const Verdict v = judge(chief, ctx);
  EXPECT_EQ(v.bound, "straggler");
  EXPECT_EQ(v.level, "highly");
  EXPECT_NEAR(v.share, 0.5, 1e-9);
  EXPECT_NE(v.advice.find("the other ranks wait for rank 1 50% of each step (in comm): rank 1 straggles in most steps: "
                          "its backward takes 8.00 ms a step (mean) against 3.00 ms"),
            std::string::npos)
      << v.advice;
  EXPECT_NE(v.advice.find("the same math takes it longer"), std::string::npos) << v.advice;
  EXPECT_TRUE(v.stragglers.empty()) << v.stragglers;  // the advice names it

  // without the straggler the same steps are communication-bound
  EXPECT_EQ(judge(chief, VerdictContext{}).bound, "communication");

  // a rank that waits for its data now and then is said, not the bound
  VerdictContext now_and_then;
  now_and_then.stragglers = {straggling(2, false, Phase::data_wait, 40, 1, 46, 6)};
  const Verdict w = judge(steps_with({{Phase::forward, 5'000'000}, {Phase::backward, 5'000'000}}), now_and_then);
  EXPECT_EQ(w.bound, "compute");
  EXPECT_NE(w.stragglers.find("rank 2 straggles now and then: its data_wait's p99 is 40.00 ms against 1.00 ms"),
            std::string::npos)
      << w.stragglers;

  // the straggler is the chief itself: its own backward, no wait of its own to subtract from comm
  ctx.judged_rank = 1;
  const PhaseStats itself = steps_with({{Phase::forward, 2'000'000}, {Phase::backward, 8'000'000}, {Phase::comm, 100'000}});
  const Verdict x = judge(itself, ctx);
  EXPECT_EQ(x.bound, "straggler");
  EXPECT_NE(x.advice.find("rank 1"), std::string::npos) << x.advice;
}
