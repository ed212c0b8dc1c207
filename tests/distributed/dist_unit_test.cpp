// The pieces of data-parallel training that need no second process: the environment protocol, the
// gradient reducer on a single-process context, uneven evaluation shards, straggler detection and
// the launcher (on /bin/sh commands).

#include <ATen/ATen.h>
#include <torch/torch.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <numeric>
#include <set>
#include <sstream>
#include <thread>

#include "distributed/node_rendezvous.hpp"
#include "fitscope/fitscope.hpp"

namespace fitscope {
namespace {

std::function<const char*(const char*)> env_of(std::map<std::string, std::string> vars) {
  auto held = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return [held](const char* name) -> const char* {
    auto it = held->find(name);
    return it == held->end() ? nullptr : it->second.c_str();
  };
}

TEST(Environment, ReadsTorchrunsVariablesAndNamesABadOne) {
  EXPECT_FALSE(distributed::read_environment(env_of({})).has_value());
  const auto env = distributed::read_environment(env_of({{"WORLD_SIZE", "4"}, {"RANK", "3"}, {"LOCAL_RANK", "1"},
                                                  {"LOCAL_WORLD_SIZE", "2"}, {"MASTER_ADDR", "10.0.0.1"},
                                                  {"MASTER_PORT", "1234"}}));
  ASSERT_TRUE(env);
  EXPECT_EQ(env->world_size, 4);
  EXPECT_EQ(env->rank, 3);
  EXPECT_EQ(env->local_rank, 1);
  EXPECT_EQ(env->local_world_size, 2);
  EXPECT_EQ(env->master_addr, "10.0.0.1");
  EXPECT_EQ(env->master_port, 1234);
  try {
    distributed::read_environment(env_of({{"WORLD_SIZE", "2"}, {"RANK", "2"}}));
    FAIL() << "rank 2 of 2 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("RANK=2"), std::string::npos) << e.what();
  }
  EXPECT_THROW(distributed::read_environment(env_of({{"WORLD_SIZE", "2"}})), std::invalid_argument);
  EXPECT_EQ(distributed::local_address_towards("127.0.0.1"), "127.0.0.1");
}

TEST(Environment, ASlurmStepsTasksAreOneDataParallelJobAndAnIncompleteStepSaysWhatToSet) {
  std::map<std::string, std::string> srun = {{"SLURM_PROCID", "3"}, {"SLURM_STEP_NUM_TASKS", "4"}, {"SLURM_NTASKS", "8"},
                                             {"SLURM_LOCALID", "1"}, {"SLURM_NODEID", "1"}, {"SLURM_STEP_TASKS_PER_NODE", "2(x2)"},
                                             {"SLURM_STEP_NODELIST", "gpu[07-08]"}, {"SLURM_JOB_ID", "1234567"},
                                             {"SLURM_STEP_ID", "2"}};
  auto env = distributed::read_environment(env_of(srun));
  ASSERT_TRUE(env);
  EXPECT_EQ(env->world_size, 4);  // the step's tasks, not the allocation's
  EXPECT_EQ(env->rank, 3);
  EXPECT_EQ(env->local_rank, 1);
  EXPECT_EQ(env->local_world_size, 2);
  EXPECT_EQ(env->master_addr, "gpu07");
  EXPECT_EQ(env->master_port, 15000 + 4567);
  EXPECT_EQ(env->job_id, "slurm-1234567.2");
  // torchrun's variables win where set
  std::map<std::string, std::string> with_port = srun;
  with_port["MASTER_PORT"] = "29999";
  EXPECT_EQ(distributed::read_environment(env_of(with_port))->master_port, 29999);
  // one task, or no srun: not a data-parallel job
  EXPECT_FALSE(distributed::read_environment(env_of({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}})).has_value());
  // the case: two tasks with only their rank and count are refused, saying what to set
  try {
    distributed::read_environment(env_of({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}}));
    FAIL() << "an incomplete Slurm step accepted";
  } catch (const std::invalid_argument& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("task 1 of a Slurm step of 2 tasks (SLURM_NTASKS), but SLURM_LOCALID, SLURM_STEP_NODELIST (or MASTER_ADDR), "
                           "SLURM_JOB_ID (or MASTER_PORT), SLURM_STEP_TASKS_PER_NODE and SLURM_NODEID (or LOCAL_WORLD_SIZE) unset"),
              std::string::npos) << message;
    EXPECT_NE(message.find("set WORLD_SIZE=1"), std::string::npos) << message;
  }
  EXPECT_EQ(distributed::first_slurm_host("node[07-09,12],gpu1"), "node07");
  EXPECT_EQ(distributed::first_slurm_host("rack[2-3]-n[001-004]"), "rack2-n001");
  EXPECT_EQ(distributed::first_slurm_host("login5"), "login5");
  EXPECT_EQ(distributed::first_slurm_host("a,b"), "a");
}

TEST(GradientReducer, BucketsInReverseOrderWithASmallFirstBucketAndAccumulatesUnderNoSync) {
  torch::manual_seed(0);
  torch::nn::Sequential net(torch::nn::Linear(8, 8), torch::nn::Linear(8, 8), torch::nn::Linear(8, 2));
  distributed::GradientReducerOptions buckets;
  buckets.first_bucket_bytes = (2 * 8 + 2) * 4;  // the last layer: its bias and weight
  buckets.bucket_cap_bytes = 1 << 20;
  auto context = distributed::single_process_context();
  distributed::GradientReducer reducer(context, net->parameters(), buckets);
  EXPECT_EQ(reducer.bucket_sizes(), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(distributed::GradientReducer(context, net->parameters(), {0, 0}).bucket_sizes(),
            (std::vector<int64_t>(6, 1)));  // a cap of 0: one bucket per parameter

  const at::Tensor x = torch::randn({4, 8}), y = torch::randn({4, 2});
  auto grads = [&] {
    std::vector<at::Tensor> g;
    for (auto& p : net->parameters()) g.push_back(p.grad().clone());
    return g;
  };
  // reference: two backward passes accumulating plainly
  for (auto& p : net->parameters()) p.mutable_grad() = at::Tensor();
  {
    distributed::NoSync no_sync(reducer);  // the reducer stays out of the way
    (net->forward(x) - y).pow(2).sum().backward();
    (net->forward(x * 2) - y).pow(2).sum().backward();
    reducer.finish();
  }
  const auto expected = grads();
  for (auto& p : net->parameters()) p.mutable_grad() = at::Tensor();
  {
    distributed::NoSync no_sync(reducer);
    (net->forward(x) - y).pow(2).sum().backward();
    reducer.finish();
  }
  (net->forward(x * 2) - y).pow(2).sum().backward();  // synced: reduces the accumulation
  reducer.finish();
  const auto got = grads();
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(at::allclose(got[i], expected[i])) << i;
  EXPECT_GE(reducer.communication_ns(), 0);
}

/// Identity whose backward sleeps: a pause in backward between the layers before and after it.
struct PauseInBackward : torch::autograd::Function<PauseInBackward> {
  static at::Tensor forward(torch::autograd::AutogradContext*, const at::Tensor& x) { return x.clone(); }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext*, torch::autograd::variable_list g) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return {g[0]};
  }
};

TEST(GradientReducer, RebuildsBucketsAtAPauseInBackwardAfterTheFirstSteps) {
  torch::manual_seed(0);
  torch::nn::Sequential net(torch::nn::Linear(8, 8),
                            torch::nn::Functional([](const at::Tensor& x) { return PauseInBackward::apply(x); }),
                            torch::nn::Linear(8, 8), torch::nn::Linear(8, 2));
  auto context = distributed::single_process_context();
  distributed::GradientReducerOptions options;
  options.rebuild_after_steps = 3;
  distributed::GradientReducer reducer(context, net->parameters(), options);
  options.rebuild_after_steps = 0;
  distributed::GradientReducer fixed(context, net->parameters(), options);
  EXPECT_EQ(reducer.bucket_sizes(), (std::vector<int64_t>{6}));  // all fit the 1 MiB first bucket

  const at::Tensor x = torch::randn({4, 8});
  for (int step = 1; step <= 4; ++step) {
    for (auto& p : net->parameters()) p.mutable_grad() = at::Tensor();
    net->forward(x).sum().backward();
    reducer.finish();
    fixed.finish();
    // the last two layers' gradients arrive before the pause, the first layer's after it
    const std::vector<int64_t> sizes = step < 3 ? std::vector<int64_t>{6} : std::vector<int64_t>{4, 2};
    const std::vector<int64_t> bytes = step < 3 ? std::vector<int64_t>{4 * 162} : std::vector<int64_t>{4 * 90, 4 * 72};
    EXPECT_EQ(reducer.bucket_sizes(), sizes) << step;
    EXPECT_EQ(reducer.bucket_bytes(), bytes) << step;
  }
  EXPECT_EQ(fixed.bucket_sizes(), (std::vector<int64_t>{6}));
  // the averaged (world of one: unchanged) gradients land where they belong after the rebuild
  std::vector<at::Tensor> reduced;
  for (auto& p : net->parameters()) {
    reduced.push_back(p.grad().clone());
    p.mutable_grad() = at::Tensor();
  }
  {
    distributed::NoSync off(reducer), off_too(fixed);
    net->forward(x).sum().backward();
  }
  const auto params = net->parameters();
  for (std::size_t i = 0; i < params.size(); ++i) EXPECT_TRUE(at::equal(params[i].grad(), reduced[i])) << i;
}

TEST(DistributedSampler, UnevenShardsSeeEveryExampleOnce) {
  std::vector<int64_t> seen;
  for (int64_t rank = 0; rank < 3; ++rank) {
    DistributedSamplerOptions o;
    o.rank = rank;
    o.world_size = 3;
    o.shuffle = false;
    o.even = false;
    DistributedSampler sampler(10, o);
    const auto shard = sampler.indices();
    EXPECT_EQ(static_cast<int64_t>(shard.size()), sampler.shard_size());
    EXPECT_EQ(sampler.padding(), 0);
    seen.insert(seen.end(), shard.begin(), shard.end());
  }
  std::sort(seen.begin(), seen.end());
  std::vector<int64_t> all(10);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(seen, all);
}

/// Rank `rank` of `world`'s shuffled sampler (seed 9) over `size` examples, at epoch `epoch`.
DistributedSampler seed_nine(int64_t size, int64_t world, int64_t rank, int64_t epoch) {
  DistributedSamplerOptions o;
  o.rank = rank;
  o.world_size = world;
  o.seed = 9;
  DistributedSampler sampler(size, o);
  sampler.set_epoch(epoch);
  return sampler;
}

/// What `world` ranks took of epoch `epoch` in their first `batches` batches of `batch`.
std::vector<int64_t> taken(int64_t size, int64_t world, int64_t epoch, int64_t batches, int64_t batch) {
  std::vector<int64_t> out;
  for (int64_t r = 0; r < world; ++r) {
    const auto shard = seed_nine(size, world, r, epoch).indices();
    out.insert(out.end(), shard.begin(), shard.begin() + std::min<int64_t>(batches * batch, static_cast<int64_t>(shard.size())));
  }
  return out;
}

TEST(DistributedSampler, ThePassAnotherNumberOfRanksBeganIsSplitAnewWithNoExampleTwiceOrLeftOut) {
  // 4 ranks took 5 batches of 6 (120 positions); 2, 3 or 5 ranks split the other 120 of 240
  for (const int64_t world : {2, 3, 5}) {
    std::vector<int64_t> seen = taken(240, 4, 7, 5, 6);
    std::vector<int64_t> lengths;
    for (int64_t r = 0; r < world; ++r) {
      const DistributedSampler sampler = seed_nine(240, world, r, 7);
      const auto rest = sampler.indices_after(120);
      lengths.push_back(static_cast<int64_t>(rest.size()));
      seen.insert(seen.end(), rest.begin(), rest.end());
      if (r == 0) EXPECT_EQ(sampler.indices_after(0), sampler.indices());
    }
    EXPECT_EQ(std::set<int64_t>(lengths.begin(), lengths.end()).size(), 1u) << world << " ranks: equal steps";
    std::vector<int64_t> once(240);
    std::iota(once.begin(), once.end(), 0);
    std::vector<int64_t> unique = seen;
    std::sort(unique.begin(), unique.end());
    unique.erase(std::unique(unique.begin(), unique.end()), unique.end());
    EXPECT_EQ(unique, once) << world << " ranks";
    // 120 / 2 and / 3 and / 5 divide: no position padded, so none seen twice
    EXPECT_EQ(seen.size(), 240u) << world << " ranks";
  }
  // 2 ranks took 3 batches of 5 (30 of 50); 4 ranks split 20 as the pass would be: 5 each
  const DistributedSampler sampler = seed_nine(50, 4, 0, 1);
  EXPECT_EQ(sampler.indices_after(30).size(), 5u);
  EXPECT_EQ(sampler.indices_after(50).size(), 0u);
  EXPECT_EQ(sampler.indices_after(52).size(), 0u);  // the old pass's pads: nothing left
  EXPECT_THROW(sampler.indices_after(-1), std::invalid_argument);
}

TEST(RankTimings, NamesTheRankWhoseBusyTimeExceedsTheMedianByTheMargin) {
  RankTimings timings(3, /*warmup_steps=*/1);
  for (int step = 0; step < 20; ++step) {
    for (int64_t rank = 0; rank < 3; ++rank) {
      StepRecord r;
      r.rank = rank;
      r.step_ns = 10'000'000;  // every rank's step is as long as the slowest's...
      r.phase_ns[static_cast<std::size_t>(Phase::comm)] = rank == 2 ? 1'000'000 : 5'000'000;  // ...rank 2 waits least
      timings.add(r);
    }
  }
  EXPECT_EQ(timings.stragglers(), (std::vector<int64_t>{2}));
  EXPECT_NEAR(timings.busy_p50_ms(2), 9.0, 0.5);
  EXPECT_EQ(timings.stats(0).measured_steps(), 19);
  EXPECT_THROW(timings.add(StepRecord{0, 0, 3}), std::out_of_range);
}

TEST(RankTimings, NamesThePhaseThatMakesAStragglerSlowInMostStepsOrNowAndThen) {
  RankTimings timings(3, /*warmup_steps=*/0);
  for (int step = 0; step < 200; ++step) {
    for (int64_t rank = 0; rank < 3; ++rank) {
      StepRecord r;
      r.rank = rank;
      auto set = [&r](Phase p, int64_t ns) { r.phase_ns[static_cast<std::size_t>(p)] = ns; };
      set(Phase::forward, 2'000'000);
      set(Phase::backward, rank == 1 ? 9'000'000 : 4'000'000);  // rank 1's backward: 5 ms more, every step
      // rank 2 waits 40 ms for its data in one step of 50 (its p99), 1 ms in the others, as ranks 0 and 1 always
      set(Phase::data_wait, rank == 2 && step % 50 == 7 ? 40'000'000 : 1'000'000);
      r.step_ns = 16'000'000;  // every rank's step is as long as the slowest's: the others wait in comm
      int64_t busy = 0;
      for (int64_t ns : r.phase_ns) busy += ns;
      set(Phase::comm, std::max<int64_t>(0, r.step_ns - busy));
      r.step_ns = std::max(r.step_ns, busy);
      timings.add(r);
    }
  }
  const std::vector<StragglerCause> causes = timings.straggler_causes();
  ASSERT_EQ(causes.size(), 2u);
  EXPECT_EQ(causes[0].rank, 1);
  EXPECT_TRUE(causes[0].chronic);
  EXPECT_EQ(causes[0].phase, Phase::backward);
  EXPECT_NEAR(causes[0].phase_ms, 9.0, 0.1);
  EXPECT_NEAR(causes[0].peers_phase_ms, 4.0, 0.1);
  EXPECT_NEAR(causes[0].busy_ms - causes[0].peers_busy_ms, 5.0, 0.2);
  EXPECT_EQ(causes[1].rank, 2);
  EXPECT_FALSE(causes[1].chronic);
  EXPECT_EQ(causes[1].phase, Phase::data_wait);
  EXPECT_NEAR(causes[1].phase_ms, 40.0, 0.5);
  EXPECT_NEAR(causes[1].peers_phase_ms, 1.0, 0.1);

  RankTimings even(2, 0);  // alike ranks: nobody straggles
  for (int step = 0; step < 50; ++step) {
    for (int64_t rank = 0; rank < 2; ++rank) {
      StepRecord r;
      r.rank = rank;
      r.step_ns = 5'000'000 + 10'000 * (step % 3);
      r.phase_ns[static_cast<std::size_t>(Phase::backward)] = r.step_ns;
      even.add(r);
    }
  }
  EXPECT_TRUE(even.straggler_causes().empty());
}

TEST(NodeRendezvous, NumbersTheNodesThatJoinNodeZeroFirstAndGoesOnWithAtLeastTheFewestAfterTheWait) {
  using distributed::detail::join_nodes;
  using distributed::detail::Membership;
  distributed::detail::NodeRendezvousHost host("127.0.0.1", 0);
  const int port = host.port();
  // every node of three: no wait
  Membership two, one;
  std::thread second([&] { two = join_nodes("127.0.0.1", port, "job", 2, 10, -1); });
  std::thread first([&] { one = join_nodes("127.0.0.1", port, "job", 1, 10, -1); });
  const Membership zero = host.gather("job", 2, 3, 30, 10, -1);
  second.join();
  first.join();
  EXPECT_EQ(zero.members, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(zero.nnodes, 3);
  EXPECT_EQ(one.node_rank, 1);
  EXPECT_EQ(two.node_rank, 2);
  EXPECT_EQ(two.nnodes, 3);
  // node 1 is gone: node 2 joins alone, and after the wait the two go on, node 2 now second
  std::thread again([&] { two = join_nodes("127.0.0.1", port, "job", 2, 10, -1); });
  const Membership left = host.gather("job", 2, 3, 0.3, 10, -1);
  again.join();
  EXPECT_EQ(left.members, (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(two.node_rank, 1);
  EXPECT_EQ(two.nnodes, 2);
  // a node of another job is refused, naming both ids; too few nodes within the timeout is an error
  std::string refused;
  std::thread other([&] {
    try {
      join_nodes("127.0.0.1", port, "another", 1, 10, -1);
    } catch (const std::runtime_error& e) {
      refused = e.what();
    }
  });
  EXPECT_THROW(host.gather("job", 2, 3, 0.1, 1.0, -1), std::runtime_error);
  other.join();
  EXPECT_NE(refused.find("refused node 1: it belongs to another job (job id 'job', that node's 'another')"), std::string::npos)
      << refused;
}

TEST(Launch, PrefixesEachRanksLinesSetsTheEnvironmentAndNamesTheFailedRank) {
  distributed::LaunchOptions o;
  o.nproc_per_node = 2;
  o.master_port = 29999;
  o.grace_s = 0.2;
  std::ostringstream out, err;
  const int ok = distributed::launch(o, {"/bin/sh", "-c", "echo \"$RANK/$WORLD_SIZE $LOCAL_RANK $MASTER_ADDR:$MASTER_PORT\"; printf tail"},
                              out, err);
  EXPECT_EQ(ok, 0) << err.str();
  EXPECT_NE(out.str().find("[rank 0] 0/2 0 127.0.0.1:29999\n"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("[rank 1] 1/2 1 127.0.0.1:29999\n"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("[rank 1] tail\n"), std::string::npos) << out.str();

  std::ostringstream out2, err2;
  // rank 1 fails at once; rank 0 would sleep for a minute: it is stopped after the grace period
  const int failed = distributed::launch(o, {"/bin/sh", "-c", "if [ $RANK = 1 ]; then exit 3; fi; sleep 60"}, out2, err2);
  EXPECT_EQ(failed, 1);
  EXPECT_NE(err2.str().find("failed: rank 1 (pid "), std::string::npos) << err2.str();
  EXPECT_NE(err2.str().find("exited with status 3"), std::string::npos) << err2.str();
  EXPECT_NE(err2.str().find("rank 0 (pid "), std::string::npos) << err2.str();  // SIGTERMed, reported

  o.node_rank = 1;
  EXPECT_THROW(distributed::launch(o, {"true"}, out, err), std::invalid_argument);
}

}  // namespace
}  // namespace fitscope
