// The thread policy, whole `fitscope train` processes side by side: the default (--threads auto)
// against the policy this replaced (intra-op threads max(1, cores - 1), the BLAS pool left at its own
// size, the cores) and against every fixed setting of the grid --threads {1, cores} x --blas-threads
// {1, cores}. Each round runs every configuration once, in an order that rotates round by round;
// ratios are taken within a round and their median printed, with the medians of samples/s and of
// the step p99.
//   ./bench_thread_policy [rounds] [fitscope CLI] [cnn|mlp]
// Goals (2 cores): default / old default >= 1.4x samples/s at batch 32 and 128 with p99 no worse;
// default / best fixed >= 0.97; the seed MLP at batch 32 unchanged or better.

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "fitscope/threads/thread_policy.hpp"
#include "rounds.hpp"

namespace fs = std::filesystem;
using fitscope::bench::median;

namespace {

struct Config {
  std::string name;
  std::string flags;  // besides the common ones
};

struct Result {
  double samples_per_s = 0, p99_ms = 0;
  std::string threads;  // intra-op x BLAS
};

Result run(const std::string& cli, const std::string& common, const std::string& flags, const fs::path& dir) {
  fs::remove_all(dir);
  const std::string command = cli + " train " + common + " " + flags + " --run-dir " + dir.string() + " > /dev/null 2>&1";
  if (std::system(command.c_str()) != 0) {
    std::fprintf(stderr, "failed: %s\n", command.c_str());
    std::exit(1);
  }
  std::ifstream in(dir / "summary.json");
  const auto summary = nlohmann::json::parse(in);
  const auto& t = summary.at("threads");
  return {summary.at("samples_per_s").get<double>(), summary.at("step_ms").at("p99").get<double>(),
          std::to_string(t.at("intra_op").get<int64_t>()) + "x" + std::to_string(t.at("blas").get<int64_t>())};
}

void compare(const std::string& cli, const std::string& title, const std::string& common,
             const std::vector<Config>& configs, int rounds) {
  const fs::path dir = fs::temp_directory_path() / "fitscope-bench-threads";
  std::map<std::string, std::vector<Result>> results;
  std::map<std::string, std::vector<double>> ratio_to_default;  // config / default, per round
  for (int r = 0; r < rounds; ++r) {
    std::map<std::string, Result> round;
    for (std::size_t i = 0; i < configs.size(); ++i) {
      const Config& c = configs[(i + static_cast<std::size_t>(r)) % configs.size()];
      round[c.name] = run(cli, common, c.flags, dir);
      results[c.name].push_back(round[c.name]);
    }
    for (const Config& c : configs) ratio_to_default[c.name].push_back(round["default"].samples_per_s / round[c.name].samples_per_s);
  }
  std::printf("%s (%d rounds; medians)\n", title.c_str(), rounds);
  std::printf("  %-34s %12s %10s %16s\n", "configuration", "samples/s", "p99 ms", "default / this");
  for (const Config& c : configs) {
    std::vector<double> speed, p99;
    for (const Result& x : results[c.name]) {
      speed.push_back(x.samples_per_s);
      p99.push_back(x.p99_ms);
    }
    std::printf("  %-34s %12.0f %10.2f %15.3fx\n", (c.name + (c.flags.empty() ? "" : " (" + c.flags + ")")).c_str(),
                median(speed), median(p99), median(ratio_to_default[c.name]));
  }
  std::printf("  the default's choice per round:");
  for (const Result& x : results["default"]) std::printf(" %s", x.threads.c_str());
  std::printf("\n");
  fs::remove_all(dir);
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 3;
  const std::string cli = argc > 2 ? argv[2] : FITSCOPE_CLI;
  const int64_t cores = fitscope::core_share(1);
  const std::string n = std::to_string(cores), old = std::to_string(std::max<int64_t>(1, cores - 1));
  std::vector<Config> cnn = {{"default", ""}, {"old default", "--threads " + old + " --blas-threads " + n}};
  for (const std::string& intra : {std::string("1"), n}) {
    for (const std::string& blas : {std::string("1"), n}) {
      cnn.push_back({"fixed " + intra + "x" + blas, "--threads " + intra + " --blas-threads " + blas});
    }
  }
  std::printf("%lld cores; old default = --threads %s with the BLAS pool at its own size (%s)\n",
              static_cast<long long>(cores), old.c_str(), n.c_str());
  const std::string quiet = " --validation-split 0 --quiet --no-tensorboard --no-best-checkpoint";
  const std::string only = argc > 3 ? argv[3] : "";
  if (only.empty() || only == "cnn") {
    compare(cli, "seed CNN, batch 32", "--model cnn --batch-size 32 --synthetic-size 8000 --epochs 1" + quiet, cnn, rounds);
    compare(cli, "seed CNN, batch 128", "--model cnn --batch-size 128 --synthetic-size 16000 --epochs 1" + quiet, cnn, rounds);
  }
  // the MLP's step is ~0.1 ms: 3 epochs, so that the measured steps outlast a pool's spinning after the search
  if (only.empty() || only == "mlp") {
    compare(cli, "seed MLP, batch 32", "--model mlp --batch-size 32 --synthetic-size 16000 --epochs 3" + quiet,
            {cnn[0], cnn[1], cnn[2], cnn[3]}, rounds);
  }
}
