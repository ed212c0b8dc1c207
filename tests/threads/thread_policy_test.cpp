// The thread policy on a real fit: every pool sized as the policy says, read back through each
// library's own query, and the CPU accounting naming the pools.
#include <gtest/gtest.h>

#include <ATen/Parallel.h>
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <thread>

#include "fitscope/data/sources/synthetic.hpp"
#include "fitscope/models/cnn.hpp"
#include "fitscope/models/mlp.hpp"
#include "fitscope/threads/blas_library.hpp"
#include "fitscope/threads/thread_names.hpp"
#include "fitscope/timing/cpu_usage.hpp"
#include "fitscope/train/trainer.hpp"

using namespace fitscope;

namespace {

/// OpenBLAS's own answer, looked up beside fitscope's BlasLibrary; -1 without OpenBLAS.
int openblas_threads() {
  using Get = int (*)();
  const auto get = reinterpret_cast<Get>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  return get ? get() : -1;
}

TensorDataset images(int64_t size) {
  SyntheticOptions o;
  o.size = size;
  return make_synthetic(o);
}

FitOptions short_fit() {
  FitOptions fit;
  fit.loader.batch_size = 32;
  fit.loader.workers = 1;
  fit.steps_per_epoch = 30;
  return fit;
}

}  // namespace

TEST(ThreadPolicy, AFixedSettingSizesTheIntraOpAndBlasPoolsAsTheLibrariesReport) {
  const int64_t cores = core_share(1);
  for (const ThreadSetting want : {ThreadSetting{cores, 1}, ThreadSetting{1, cores}}) {
    TrainerOptions options;
    options.threads.intra_op = want.intra_op;
    options.threads.blas = want.blas;
    options.warmup_steps = 0;
    Trainer trainer(models::Cnn(), options);
    trainer.fit(images(960), short_fit());
    EXPECT_EQ(trainer.measured().threads.chosen_by, "flag");
    EXPECT_EQ(trainer.measured().threads.setting, want);
    EXPECT_EQ(at::get_num_threads(), want.intra_op);
    if (loaded_blas().has_pool() && openblas_threads() > 0) {
      EXPECT_EQ(openblas_threads(), want.blas) << loaded_blas().name();
    }
    EXPECT_EQ(loaded_blas().threads(), loaded_blas().has_pool() ? want.blas : 1);
  }
}

TEST(ThreadPolicy, AutoWaitsForAFitLongEnoughThenMeasuresTheCandidatesAsWarmupAndLeavesTheChoiceInForce) {
  TrainerOptions options;
  options.warmup_steps = 2;
  options.threads.steps_per_candidate = 2;
  Trainer trainer(models::Mlp(), options);
  const auto candidates = thread_candidates(core_share(1), loaded_blas().has_pool());
  if (candidates.size() < 2) GTEST_SKIP() << "one core: a single candidate, nothing to search";
  const int64_t search = 3 * static_cast<int64_t>(candidates.size()) + ThreadTuner::kFirstSettlingSteps - 1;
  EXPECT_EQ(trainer.warmup_steps(), 2 + search);  // as planned before any fit
  // 30 steps cannot pay for a search: the default (the first candidate) runs, and says so
  FitOptions fit = short_fit();
  fit.loader.batch_size = 8;
  trainer.fit(images(1600), fit);
  EXPECT_EQ(trainer.measured().threads.setting, candidates.front());
  EXPECT_GT(trainer.measured().threads.search_needs_steps, 30);
  EXPECT_TRUE(trainer.measured().threads.candidates.empty());
  EXPECT_EQ(trainer.measured().stats.warmup_steps(), 2);
  // a fit long enough gives the search at most 5% of its steps (and its cool-down 4%)
  fit.steps_per_epoch = 1000;
  trainer.fit(images(1600), fit);
  const ThreadChoice& choice = trainer.measured().threads;
  EXPECT_EQ(choice.chosen_by, "auto");
  EXPECT_EQ(choice.search_needs_steps, 0);
  EXPECT_GE(choice.search_steps, search);
  EXPECT_LE(choice.search_steps, 50 + 40);
  EXPECT_EQ(trainer.measured().stats.warmup_steps(), 2 + choice.search_steps);
  EXPECT_EQ(trainer.warmup_steps(), 2);  // searched once per trainer
  ASSERT_EQ(choice.candidates.size(), candidates.size());
  const auto fastest = std::min_element(choice.candidates.begin(), choice.candidates.end(), [](const auto& a, const auto& b) {
    return a.step_ms > 0 && (b.step_ms <= 0 || a.step_ms < b.step_ms);
  });
  EXPECT_GT(fastest->step_ms, 0);
  // the earliest candidate within 5% of the fastest (the default first)
  const auto kept = std::find_if(choice.candidates.begin(), choice.candidates.end(), [&](const ThreadCandidate& c) {
    return c.step_ms > 0 && (1 - ThreadTuner::kMinGain) * c.step_ms <= fastest->step_ms;
  });
  ASSERT_NE(kept, choice.candidates.end());
  EXPECT_EQ(choice.setting, kept->setting);
  EXPECT_EQ(at::get_num_threads(), choice.setting.intra_op);
  if (loaded_blas().has_pool() && openblas_threads() > 0) EXPECT_EQ(openblas_threads(), choice.setting.blas);
}

TEST(ThreadPolicy, TheCpuAccountingNamesEveryPoolAndFindsTheTrainingThreadAndTheLoader) {
  TrainerOptions options;
  options.threads.intra_op = core_share(1);
  options.warmup_steps = 0;
  Trainer trainer(models::Cnn(), options);
  trainer.fit(images(960), short_fit());
  const CpuUtilization& cpu = trainer.measured().cpu;
  std::vector<std::string> pools;
  for (const PoolCpu& p : cpu.pools) pools.push_back(p.pool);
  EXPECT_EQ(pools, (std::vector<std::string>{"training", "intra_op", "blas", "loader", "callbacks", "checkpoint",
                                             "communication", "other"}));
  EXPECT_EQ(cpu.pool("training")->threads, 1);
  EXPECT_GT(cpu.pool("training")->cores, 0);
  // one worker, named fs-loader, its ATen ops kept on it; ATen's set-up of a new thread also rebuilds
  // its pthreadpool (XNNPACK's), whose idle threads may inherit the worker's name
  EXPECT_GE(cpu.pool("loader")->threads, 1);
  EXPECT_LT(cpu.pool("loader")->cores, 0.5);
  // the training thread leads the team; OpenMP may keep an idle worker from an earlier team size
  if (core_share(1) > 1) EXPECT_GE(cpu.pool("intra_op")->threads, core_share(1) - 1);
  if (core_share(1) > 1) EXPECT_GT(cpu.pool("intra_op")->cores, 0);
  double sum = 0;
  for (const PoolCpu& p : cpu.pools) sum += p.cores;
  EXPECT_NEAR(sum, cpu.process_cores, 0.05);
}

TEST(CpuUsage, ReadsTheBusyTimeOfTheAffinityMasksCpusFromProcStat) {
  const std::string stat =
      "cpu  900 0 300 5000 100 0 0 0 0 0\n"
      "cpu0 400 10 100 2500 50 5 5 0 0 0\n"
      "cpu1 500 0 200 2500 50 0 0 20 0 0\n"
      "intr 12345\n";
  EXPECT_DOUBLE_EQ(fitscope::detail::busy_cpu_seconds(stat, {0}, 100), 5.2);   // idle and iowait left out
  EXPECT_DOUBLE_EQ(fitscope::detail::busy_cpu_seconds(stat, {0, 1}, 100), 12.4);  // steal counts as busy
  EXPECT_DOUBLE_EQ(fitscope::detail::busy_cpu_seconds(stat, {3}, 100), -1);
}

TEST(CpuUsage, CountsAnotherProcessSpinningOnThisProcesssCpus) {
  CpuUsage usage;
  usage.start();
  // the planted load: a child (it inherits the affinity mask) that spins for a second while this
  // process sleeps
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    volatile std::uint64_t spin = 0;
    while (std::chrono::steady_clock::now() < end) spin = spin + 1;
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  const CpuUtilization u = usage.stop();
  ASSERT_GE(u.others_cores, 0) << "/proc/stat was not read";
  EXPECT_GT(u.others_cores, 0.3);  // the spinner's share of a core, whatever else ran beside it
}

TEST(ThreadNames, NamesTheThreadsOfThisProcess) {
  std::thread t([] {
    thread_names::name_this_thread(thread_names::kLoader);
    EXPECT_EQ(thread_names::thread_name(thread_names::this_thread_id()), "fs-loader");
    EXPECT_TRUE(thread_names::is_fitscope_name(thread_names::thread_name(thread_names::this_thread_id())));
  });
  t.join();
  const auto ids = thread_names::thread_ids();
  EXPECT_NE(std::find(ids.begin(), ids.end(), thread_names::this_thread_id()), ids.end());
}
