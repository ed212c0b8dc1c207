// Data-parallel training on loopback Gloo, ratios side by side in one run:
//   1. a world-size-1 context against no context (same trainer, same data): goal <= 1.01
//   2. bucketed all-reduce against one all-reduce per parameter, on a model of many small parameters
//      (2 ranks, backward + gradient sync per step): goal >= 2x
//   3. exposed `comm` against the whole time communication is in flight, seed CNN (2 ranks), the median
//      of `rounds` runs: goal <= 30 %; printed with the buckets the reducer rebuilt and what one lone
//      all-reduce of each size takes, and the same share for the median step (the mean carries the steps
//      whose wait took a descheduled peer's or thread's time slice)
//   4. 2-rank throughput against 1 rank, each with the thread policy's intra-op threads
//   5. waits that poll before they sleep (the default) against waits that sleep at once: one lone
//      all-reduce of 1.25 KiB, and the seed CNN's samples/s (2 ranks)
// Run without arguments: it measures 1 and the 1-rank side of 4 itself, then launches itself as two
// ranks (fitscope::distributed::launch) for 2-5. Usage: bench_distributed [rounds] [cnn_steps] [cnn_batch]

#include <ATen/ATen.h>
#include <torch/torch.h>

#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

#include "fitscope/fitscope.hpp"
#include "rounds.hpp"

namespace {

using namespace fitscope;

TensorDataset images(int64_t size) {
  SyntheticOptions s;
  s.size = size;
  return make_synthetic(s);
}

/// Samples/s of the seed CNN over `steps` measured steps (after 10 warm-up steps) on `context`.
struct CnnRun {
  double samples_per_s = 0, exposed_ms = 0, in_flight_ms = 0;
  double exposed_p50_ms = 0, exposed_p90_ms = 0, in_flight_p50_ms = 0;  // per step
  std::vector<int64_t> buckets;  // bytes
  std::string pools;  // the CPU each pool kept busy: "pool cores(threads) ..."
};
CnnRun train_cnn(std::shared_ptr<distributed::Context> context, int64_t steps, int64_t batch, bool rebuild_buckets = true) {
  torch::manual_seed(0);
  TrainerOptions options;
  options.context = std::move(context);
  options.warmup_steps = 10;
  if (!rebuild_buckets) options.buckets.rebuild_after_steps = 0;
  Trainer trainer(models::Cnn(28, 1, 10), options);
  FitOptions fit;
  fit.steps_per_epoch = steps + options.warmup_steps;
  fit.loader.batch_size = batch;
  trainer.fit(images(4000), fit);
  CnnRun run;
  run.samples_per_s = trainer.measured().stats.samples_per_s();
  run.exposed_ms = trainer.measured().stats.phase(Phase::comm).mean_ms;
  run.in_flight_ms = trainer.measured().communication.mean() * 1e-6;
  run.exposed_p50_ms = trainer.measured().stats.phase(Phase::comm).p50_ms;
  run.exposed_p90_ms = trainer.measured().stats.phase(Phase::comm).p90_ms;
  run.in_flight_p50_ms = trainer.measured().communication.quantile(0.5) * 1e-6;
  run.buckets = trainer.measured().gradient_buckets;
  std::ostringstream pools;
  pools << std::fixed << std::setprecision(2);
  for (const PoolCpu& p : trainer.measured().cpu.pools) {
    if (p.threads > 0 || p.cores >= 0.005) pools << " " << p.pool << " " << p.cores << "(" << p.threads << ")";
  }
  run.pools = pools.str();
  return run;
}

/// Seconds per backward + gradient sync of a stack of small layers, with the given bucket cap.
double sync_seconds(const std::shared_ptr<distributed::Context>& context, torch::nn::Sequential& net, int64_t cap, int iterations) {
  distributed::GradientReducerOptions buckets;
  buckets.bucket_cap_bytes = cap;
  distributed::GradientReducer reducer(context, net->parameters(), buckets);
  const at::Tensor x = torch::randn({8, 16});
  auto step = [&] {
    net->forward(x).sum().backward();
    reducer.finish();
  };
  step();
  return bench::seconds([&] {
           for (int i = 0; i < iterations; ++i) step();
         }) / iterations;
}

/// Seconds of one all-reduce of `bytes` on its own, every rank calling it in a loop.
double lone_all_reduce_seconds(distributed::Context& context, int64_t bytes) {
  const at::Tensor t = torch::ones({bytes / 4});
  for (int i = 0; i < 20; ++i) context.all_reduce(t);
  return bench::seconds([&] {
           for (int i = 0; i < 200; ++i) context.all_reduce(t);
         }) / 200;
}

int rank_main(int rounds, int64_t cnn_steps, int64_t cnn_batch) {
  auto context = distributed::context_from_environment();
  distributed::Environment second = *distributed::read_environment();  // a context whose waits sleep at once
  second.master_port += 1;
  if (!second.rendezvous_file.empty()) second.rendezvous_file += ".second";  // its own store: the first holds the first's keys
  auto sleeping = distributed::make_gloo_context(second, distributed::kDefaultTimeout, std::chrono::microseconds(0));
  torch::manual_seed(0);
  torch::nn::Sequential net;
  for (int i = 0; i < 64; ++i) net->push_back(torch::nn::Linear(16, 16));
  std::vector<double> ratios;
  double bucketed = 0, per_parameter = 0;
  for (int r = 0; r < rounds; ++r) {
    const double b = sync_seconds(context, net, 25 << 20, 100), p = sync_seconds(context, net, 0, 100);
    bucketed += b / rounds;
    per_parameter += p / rounds;
    ratios.push_back(p / b);
  }
  const CnnRun fixed = train_cnn(context, cnn_steps, cnn_batch, /*rebuild_buckets=*/false);
  CnnRun cnn;
  std::vector<double> exposed_shares, median_step_shares, polling_gains;  // per round
  std::ostringstream shares;
  for (int r = 0; r < rounds; ++r) {  // polling and sleeping waits, which goes first alternating
    CnnRun asleep;
    if (r % 2) asleep = train_cnn(sleeping, cnn_steps, cnn_batch);
    cnn = train_cnn(context, cnn_steps, cnn_batch);
    if (r % 2 == 0) asleep = train_cnn(sleeping, cnn_steps, cnn_batch);
    exposed_shares.push_back(100 * cnn.exposed_ms / cnn.in_flight_ms);
    median_step_shares.push_back(100 * cnn.exposed_p50_ms / cnn.in_flight_p50_ms);
    polling_gains.push_back(cnn.samples_per_s / asleep.samples_per_s);
    shares << " " << std::fixed << std::setprecision(1) << exposed_shares.back() << " (" << cnn.buckets.size() << " buckets)";
  }
  std::ostringstream buckets;  // each bucket's size, and one lone all-reduce of that size (ms)
  for (int64_t bytes : cnn.buckets) {
    buckets << std::fixed << std::setprecision(2) << " " << static_cast<double>(bytes) / 1024 << " KiB ("
            << lone_all_reduce_seconds(*context, bytes) * 1e3 << " ms)";
  }
  std::vector<double> polled, slept;
  for (int r = 0; r < rounds; ++r) {
    polled.push_back(lone_all_reduce_seconds(*context, 1280));
    slept.push_back(lone_all_reduce_seconds(*sleeping, 1280));
  }
  if (context->is_chief()) {
    std::cout << "RESULT bucket_ratio " << bench::median(ratios) << "\n"
              << "RESULT bucketed_ms " << bucketed * 1e3 << "\n"
              << "RESULT per_parameter_ms " << per_parameter * 1e3 << "\n"
              << "RESULT exposed_share " << bench::median(exposed_shares) << "\n"
              << "RESULT exposed_shares" << shares.str() << "\n"
              << "RESULT median_step_share " << bench::median(median_step_shares) << "\n"
              << "RESULT exposed_ms " << cnn.exposed_ms << "\n"
              << "RESULT exposed_p50_ms " << cnn.exposed_p50_ms << "\n"
              << "RESULT exposed_p90_ms " << cnn.exposed_p90_ms << "\n"
              << "RESULT in_flight_p50_ms " << cnn.in_flight_p50_ms << "\n"
              << "RESULT in_flight_ms " << cnn.in_flight_ms << "\n"
              << "RESULT fixed_exposed_ms " << fixed.exposed_ms << "\n"
              << "RESULT fixed_in_flight_ms " << fixed.in_flight_ms << "\n"
              << "RESULT fixed_samples_per_s_per_rank " << fixed.samples_per_s << "\n"
              << "RESULT buckets" << buckets.str() << "\n"
              << "RESULT samples_per_s_per_rank " << cnn.samples_per_s << "\n"
              << "RESULT polling_gain " << bench::median(polling_gains) << "\n"
              << "RESULT polled_ms " << bench::median(polled) * 1e3 << "\n"
              << "RESULT slept_ms " << bench::median(slept) * 1e3 << "\n";
  }
  std::cout << "RESULT pools_rank" << context->rank() << cnn.pools << "\n";  // every rank's own
  sleeping->barrier();
  context->barrier();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 9;
  const int64_t cnn_steps = argc > 2 ? std::atoll(argv[2]) : 150;
  const int64_t cnn_batch = argc > 3 ? std::atoll(argv[3]) : 32;
  if (std::getenv("WORLD_SIZE")) return rank_main(rounds, cnn_steps, cnn_batch);

  // 1. the single-process context against none: the seed MLP, alternating rounds
  const TensorDataset data = images(8000);
  auto fit_mlp = [&](std::shared_ptr<distributed::Context> context) {
    torch::manual_seed(0);
    TrainerOptions options;
    options.context = std::move(context);
    Trainer trainer(models::Mlp(28 * 28, 10), options);
    FitOptions fit;
    fit.steps_per_epoch = 400;
    trainer.fit(data, fit);
  };
  const double context_ratio =
      bench::paired_ratio(rounds, [&] { fit_mlp(nullptr); }, [&] { fit_mlp(distributed::single_process_context()); });
  // 4, one rank
  const CnnRun one = train_cnn(nullptr, cnn_steps, cnn_batch);

  std::ostringstream out, err;
  distributed::LaunchOptions launch;
  launch.nproc_per_node = 2;
  launch.master_port = 29000 + static_cast<int64_t>(::getpid() % 1000);
  const int status = distributed::launch(launch, {argv[0], std::to_string(rounds), std::to_string(cnn_steps), std::to_string(cnn_batch)}, out, err);
  if (status != 0) {
    std::cerr << err.str() << out.str();
    return 1;
  }
  std::map<std::string, std::string> text;  // "[rank 0] RESULT key value..."
  std::istringstream lines(out.str());
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string prefix, rank, tag, key, value;
    if (words >> prefix >> rank >> tag >> key && tag == "RESULT") std::getline(words >> std::ws, text[key]);
  }
  auto result = [&](const std::string& key) { return std::atof(text[key].c_str()); };
  const double two = 2 * result("samples_per_s_per_rank");
  std::cout << "cores per rank (thread policy): 1 rank " << core_share(1) << ", 2 ranks " << core_share(2) << "\n"
            << "1. world-size-1 context / no context, seed MLP time:         x" << context_ratio << "  (goal <= 1.01)\n"
            << "2. per-parameter / bucketed all-reduce, 64 Linear(16,16):     x" << result("bucket_ratio") << "  ("
            << result("per_parameter_ms") << " ms vs " << result("bucketed_ms") << " ms per backward+sync; goal >= 2)\n"
            << "3. exposed comm / communication in flight, seed CNN, 2 ranks:  " << result("exposed_share")
            << " %, median of " << rounds << " runs (goal <= 30 %); the runs:" << text["exposed_shares"] << "\n"
            << "   the last run: " << result("exposed_ms") << " ms exposed of " << result("in_flight_ms") << " ms in flight (means)\n"
            << "   the median step instead of the mean: " << result("median_step_share") << " %, median of the runs; the last run: "
            << result("exposed_p50_ms") << " ms exposed (p90 " << result("exposed_p90_ms") << " ms) of " << result("in_flight_p50_ms")
            << " ms in flight\n"
            << "   buckets (launch order) and one lone all-reduce of each:   " << text["buckets"] << "\n"
            << "   the same without rebuilding the buckets (one bucket):       " << result("fixed_exposed_ms") << " ms / "
            << result("fixed_in_flight_ms") << " ms = " << 100 * result("fixed_exposed_ms") / result("fixed_in_flight_ms")
            << " %, samples/s x" << result("samples_per_s_per_rank") / result("fixed_samples_per_s_per_rank")
            << " with the rebuild\n"
            << "4. seed CNN samples/s: 2 ranks " << two << " vs 1 rank " << one.samples_per_s << ": x" << two / one.samples_per_s
            << "\n"
            << "5. waits that sleep at once / that poll first (default), one lone all-reduce of 1.25 KiB: x"
            << result("slept_ms") / result("polled_ms") << "  (" << result("slept_ms") << " ms vs " << result("polled_ms")
            << " ms)\n"
            << "   seed CNN samples/s, 2 ranks, polling first / sleeping at once: x" << result("polling_gain")
            << ", median of " << rounds << " paired runs\n"
            << "6. CPU per pool in the last run of item 3, cores busy (threads): rank 0" << text["pools_rank0"]
            << "\n                                                               rank 1" << text["pools_rank1"] << "\n";
  return 0;
}
