// --workers auto against every fixed worker count, whole `fitscope train` processes side by side.
// Each round runs every configuration of a case once, in an order that rotates round by round; the
// throughput is the whole training's (samples over the training steps' wall time, the tuner's
// ramp-up included), and the ratio auto / best fixed is taken within a round, its median printed.
//   ./bench_loader_autotune [rounds] [a|b|c|d|e] [fitscope CLI]
// Goals (issue 22): (a) seed MLP, batch 32, --load-delay-ms 1: auto >= 0.95 of the best of
// --workers {0, 1, 2, 4, 8, 16}; (b) seed CNN on a generated folder of 64x64 JPEGs: >= 0.95 of the
// best; (c) the compute-bound default run (seed CNN, built-in data): >= 0.98 of --workers 1. And (d),
// where decoding bounds the run on 2 cores: the seed MLP on the same folder (>= 0.95 of the best).
// Issue 35: (e) the seed CNN at batch 32 with a load delay equal to its step keeps >= 0.95 of its
// undelayed throughput, both on the defaults (--workers auto).

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "rounds.hpp"

namespace fs = std::filesystem;
using fitscope::bench::median;

namespace {

struct Result {
  double samples_per_s = 0;  // whole training
  double measured_samples_per_s = 0;  // summary.json's, after the warm-up
  double step_p50_ms = 0;
  int64_t workers = 0;       // at the end
  int64_t changes = 0;
};

Result run(const std::string& cli, const std::string& common, const std::string& workers, const fs::path& dir) {
  fs::remove_all(dir);
  const std::string command = cli + " train " + common + " --workers " + workers + " --run-dir " + dir.string() +
                              " > /dev/null 2>&1";
  if (std::system(command.c_str()) != 0) {
    std::fprintf(stderr, "failed: %s\n", command.c_str());
    std::exit(1);
  }
  std::ifstream in(dir / "summary.json");
  const auto s = nlohmann::json::parse(in);
  const double samples = static_cast<double>(s.at("steps").get<int64_t>() * s.at("batch_size").get<int64_t>());
  const auto& loader = s.at("loader");
  return {samples / s.at("run").at("training_steps").get<double>(), s.at("samples_per_s").get<double>(),
          s.at("step_ms").at("p50").get<double>(), loader.at("workers").get<int64_t>(),
          static_cast<int64_t>(loader.at("changes").size()) - 1};
}

/// Prints the case's table; `against` empty = the best fixed count.
void compare(const std::string& cli, const std::string& title, const std::string& common, int rounds,
             const std::string& against, double goal) {
  const fs::path dir = fs::temp_directory_path() / "fitscope-bench-autotune";
  const std::vector<std::string> configs = {"auto", "0", "1", "2", "4", "8", "16"};
  std::map<std::string, std::vector<double>> speed;
  std::vector<double> ratios;
  std::vector<Result> autos;
  std::string best_name;
  for (int r = 0; r < rounds; ++r) {
    std::map<std::string, double> round;
    for (std::size_t i = 0; i < configs.size(); ++i) {
      const std::string& c = configs[(i + static_cast<std::size_t>(r)) % configs.size()];
      const Result x = run(cli, common, c, dir);
      round[c] = x.samples_per_s;
      speed[c].push_back(x.samples_per_s);
      if (c == "auto") autos.push_back(x);
    }
    std::string best = against;
    if (best.empty()) {
      for (const std::string& c : configs) {
        if (c != "auto" && (best.empty() || round[c] > round[best])) best = c;
      }
    }
    best_name += (best_name.empty() ? "" : ", ") + best;
    ratios.push_back(round["auto"] / round[best]);
  }
  std::printf("%s (%d rounds; medians of samples/s over the whole training)\n", title.c_str(), rounds);
  for (const std::string& c : configs) std::printf("  --workers %-5s %10.0f\n", c.c_str(), median(speed[c]));
  std::printf("  auto's workers at the end (changes):");
  for (const Result& a : autos) std::printf(" %lld (%lld)", static_cast<long long>(a.workers), static_cast<long long>(a.changes));
  std::printf("\n  auto / %s (per round: %s): %.3f  [goal >= %.2f]\n\n",
              against.empty() ? "best fixed" : ("--workers " + against).c_str(), best_name.c_str(), median(ratios), goal);
  fs::remove_all(dir);
}

/// (e): the undelayed run sets the delay (its step's p50), then delayed and undelayed alternate.
void delayed_like_its_step(const std::string& cli, const std::string& common, int rounds) {
  const fs::path dir = fs::temp_directory_path() / "fitscope-bench-autotune";
  char delay[32];
  std::snprintf(delay, sizeof delay, "%.2f", run(cli, common, "auto", dir).step_p50_ms);
  std::vector<double> whole, measured;
  std::vector<Result> delayed_runs;
  for (int r = 0; r < rounds; ++r) {
    Result plain, delayed;
    for (int i = 0; i < 2; ++i) {
      if ((i + r) % 2 == 0) {
        plain = run(cli, common, "auto", dir);
      } else {
        delayed = run(cli, common + " --load-delay-ms " + delay, "auto", dir);
      }
    }
    whole.push_back(delayed.samples_per_s / plain.samples_per_s);
    measured.push_back(delayed.measured_samples_per_s / plain.measured_samples_per_s);
    delayed_runs.push_back(delayed);
  }
  std::printf("(e) seed CNN, batch 32, --load-delay-ms %s (its step's p50) against none, both --workers auto (%d rounds)\n",
              delay, rounds);
  std::printf("  delayed's workers at the end (changes):");
  for (const Result& d : delayed_runs) std::printf(" %lld (%lld)", static_cast<long long>(d.workers), static_cast<long long>(d.changes));
  std::printf("\n  delayed / undelayed, samples/s after the warm-up (summary.json): %.3f  [goal >= 0.95]\n", median(measured));
  std::printf("  delayed / undelayed, samples/s over the whole training: %.3f\n\n", median(whole));
  fs::remove_all(dir);
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 3;
  const std::string only = argc > 2 ? argv[2] : "";
  const std::string cli = argc > 3 ? argv[3] : FITSCOPE_CLI;
  const std::string quiet = " --validation-split 0 --quiet --no-tensorboard --no-best-checkpoint";
  if (only.empty() || only == "a") {
    compare(cli, "(a) seed MLP, batch 32, --load-delay-ms 1",
            "--model mlp --batch-size 32 --load-delay-ms 1 --synthetic-size 64000 --epochs 20" + quiet, rounds, "", 0.95);
  }
  const fs::path images = fs::temp_directory_path() / "fitscope-bench-autotune-jpeg64";
  if ((only.empty() || only == "b" || only == "d") && !fs::exists(images / "done")) {
    fs::remove_all(images);
    const std::string make = cli + " make-images " + images.string() + " --count 4000 --size 64,64 > /dev/null";
    if (std::system(make.c_str()) != 0) return 1;
    std::ofstream(images / "done") << "4000 64x64 JPEGs\n";
  }
  const std::string folder = " --batch-size 64 --data images:" + images.string() + " --image-size 64,64";
  if (only.empty() || only == "b") {
    compare(cli, "(b) seed CNN, batch 64, a folder of 4000 64x64 JPEGs", "--model cnn --epochs 2" + folder + quiet,
            rounds, "", 0.95);
  }
  if (only.empty() || only == "c") {
    compare(cli, "(c) the compute-bound default run: seed CNN, built-in data", "--epochs 1" + quiet, rounds, "1", 0.98);
  }
  if (only.empty() || only == "d") {
    compare(cli, "(d) decoding-bound: seed MLP, batch 64, the same folder", "--model mlp --epochs 20" + folder + quiet,
            rounds, "", 0.95);
  }
  if (only.empty() || only == "e") {
    delayed_like_its_step(cli, "--model cnn --batch-size 32 --synthetic-size 16000 --epochs 3" + quiet, rounds);
  }
}
