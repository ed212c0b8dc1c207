// The steps' counted tensor memory (TrainerOptions::track_memory: held at a step's end above the fit's
// start + the step's peak within it) against the resident growth the kernel sees: in a child process
// per batch size and heap setting, the seed CNN trains one short fit (lazy initialisation: OpenBLAS's and
// oneDNN's buffers), then the kernel's resident high-water mark is reset (/proc/self/clear_refs) and a
// second fit of 20 steps runs; its growth is VmHWM after it less VmRSS before it. keep_freed_memory is
// off, so what a step frees goes back to the kernel and the second fit starts from what the process holds.
// Two heap settings side by side: glibc's defaults, whose thresholds rise with the blocks freed (a freed
// block of up to 32 MiB raises the mmap threshold to its size and the trim threshold to twice that, so
// later blocks come from the heap and up to 64 MiB of freed memory stays resident), and glibc told to
// return what is freed (M_MMAP_THRESHOLD and M_TRIM_THRESHOLD fixed at 128 KiB): the difference is the
// memory the heap keeps after the tensors are gone, which no tensor count sees.
//   ./bench_step_memory [batch sizes, default 256 1024]

#include <malloc.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "fitscope/fitscope.hpp"

using namespace fitscope;

namespace {

int child(int64_t batch) {
  if (std::getenv("FITSCOPE_BENCH_RETURNING_HEAP")) {
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
    mallopt(M_TRIM_THRESHOLD, 128 * 1024);
  }
  TrainerOptions options;
  options.threads.intra_op = 1;
  options.threads.blas = 1;
  options.keep_freed_memory = false;
  options.layer_probe_every = -1;
  options.warmup_steps = 2;
  Trainer trainer(models::Cnn(), options);
  SyntheticOptions data;
  data.size = batch * 20;
  const auto set = std::make_shared<TensorDataset>(make_synthetic(data));
  FitOptions fit;
  fit.loader.batch_size = batch;
  fit.loader.workers = 0;
  fit.max_steps = 3;
  trainer.fit(set, fit);  // lazy initialisation
  reset_resident_peak();
  const int64_t before = process_memory().resident;
  fit.max_steps = 20;
  trainer.fit(set, fit);
  const int64_t growth = process_memory().resident_peak - before;
  const MemoryStats& m = trainer.measured().memory;
  std::printf("%lld %lld\n", static_cast<long long>(m.held_at_end() + m.step_peak_bytes()), static_cast<long long>(growth));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "child") return child(std::atoll(argv[2]));
  std::vector<int64_t> batches;
  for (int i = 1; i < argc; ++i) batches.push_back(std::atoll(argv[i]));
  if (batches.empty()) batches = {256, 1024};
  for (int64_t batch : batches) {
    std::printf("seed CNN, batch %lld:\n", static_cast<long long>(batch));
    for (const char* heap : {"", "FITSCOPE_BENCH_RETURNING_HEAP=1 "}) {
      const std::string command = std::string(heap) + argv[0] + " child " + std::to_string(batch);
      FILE* out = ::popen(command.c_str(), "r");
      long long counted = 0, growth = 0;
      if (!out || std::fscanf(out, "%lld %lld", &counted, &growth) != 2) {
        std::fprintf(stderr, "bench_step_memory: %s printed no figures\n", command.c_str());
        return 1;
      }
      ::pclose(out);
      std::printf("  %-42s counted %6.1f MB, resident growth %6.1f MB: counted / resident %.3f\n",
                  *heap ? "glibc returning what is freed (128 KiB):" : "glibc's defaults:", counted * 1e-6, growth * 1e-6,
                  static_cast<double>(counted) / static_cast<double>(growth));
    }
  }
  return 0;
}
