// Whether the memory a training step frees is kept for the next step (TrainerOptions::keep_freed_memory)
// or, depending on the heap's layout, handed back to the kernel and faulted in again every step.
// For each of `layouts` heap layouts (a block of 16 x k bytes allocated before training and kept, as a
// longer path or another flag's text would), a child process trains the seed CNN on 1200 synthetic
// examples, batch 32, one epoch, one thread, with keep_freed_memory off and on; each prints its step
// p50 and minor page faults per step. Then the median and the largest ratio off / on.
//   ./bench_freed_memory [layouts, default 12]

#include <ATen/Parallel.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "fitscope/fitscope.hpp"

using namespace fitscope;

namespace {

int child(int64_t pad, bool keep) {
  volatile char* block = static_cast<char*>(std::malloc(static_cast<std::size_t>(16 * pad + 1)));
  block[0] = 1;  // kept to the end: the later allocations are laid out after it
  at::set_num_threads(1);
  TrainerOptions options;
  options.keep_freed_memory = keep;
  options.threads.intra_op = 1;
  options.threads.blas = 1;
  Trainer trainer(models::Cnn(), options);
  SyntheticOptions data;
  data.size = 1200;
  FitOptions fit;
  fit.loader.batch_size = 32;
  fit.loader.workers = 0;
  rusage before{}, after{};
  getrusage(RUSAGE_SELF, &before);
  trainer.fit(make_synthetic(data), fit);
  getrusage(RUSAGE_SELF, &after);
  const PhaseStats& stats = trainer.measured().stats;
  std::printf("%.3f %.1f\n", stats.step().p50_ms,
              static_cast<double>(after.ru_minflt - before.ru_minflt) / static_cast<double>(std::max<int64_t>(stats.steps(), 1)));
  return 0;
}

/// One child's step p50 and faults per step.
std::pair<double, double> run(const char* self, int64_t pad, bool keep) {
  const std::string command = std::string(self) + " child " + std::to_string(pad) + " " + (keep ? "1" : "0");
  FILE* out = ::popen(command.c_str(), "r");
  double p50 = 0, faults = 0;
  if (!out || std::fscanf(out, "%lf %lf", &p50, &faults) != 2) {
    std::fprintf(stderr, "bench_freed_memory: %s printed no figures\n", command.c_str());
    std::exit(1);
  }
  ::pclose(out);
  return {p50, faults};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::string(argv[1]) == "child") return child(std::atoll(argv[2]), std::string(argv[3]) == "1");
  const int64_t layouts = argc > 1 ? std::atoll(argv[1]) : 12;
  std::vector<double> ratios;
  std::printf("layout   kept off: step p50, faults/step   kept on: step p50, faults/step   off / on\n");
  for (int64_t k = 0; k < layouts; ++k) {
    const auto off = run(argv[0], k, false), on = run(argv[0], k, true);
    ratios.push_back(off.first / on.first);
    std::printf("%6lld   %17.3f ms %10.0f   %16.3f ms %10.0f   %8.2f\n", static_cast<long long>(k), off.first, off.second, on.first,
                on.second, ratios.back());
  }
  std::vector<double> sorted = ratios;
  std::sort(sorted.begin(), sorted.end());
  std::printf("the seed CNN's step, keep_freed_memory off / on, over %lld heap layouts: median %.2fx, largest %.2fx, smallest %.2fx\n",
              static_cast<long long>(layouts), sorted[sorted.size() / 2], sorted.back(), sorted.front());
  return 0;
}
