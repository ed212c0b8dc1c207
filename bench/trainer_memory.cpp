// The trainer's own memory per parameter: the seed MLP (784 -> classes) trained with Adam at 3,000 and
// at 6,000 classes, each in a child process, and the growth of its resident peak (VmHWM) per parameter
// added; with no backup, with a backup every epoch read live and with one copied first
// (BackupAndRestoreOptions::snapshot); each three times, the median; under glibc's malloc and under
// tcmalloc (LD_PRELOAD, as the CLI links it where libtcmalloc-minimal4 is installed), with the step p50
// of each at 6,000 classes. Adam itself needs 16 bytes a parameter (weights, gradients, two moments).
//   ./bench_trainer_memory [examples, default 4000]

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "fitscope/fitscope.hpp"

using namespace fitscope;

namespace {

constexpr const char* kTcmalloc = "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4";

/// backup: 0 none, 1 read live, 2 copied
int child(int64_t classes, int backup, int64_t examples) {
  TrainerOptions options;
  options.threads.intra_op = 1;
  options.threads.blas = 1;
  options.layer_probe_every = -1;
  Trainer trainer(models::Mlp(784, classes), options);
  SyntheticOptions data;
  data.size = examples;
  data.classes = classes;
  FitOptions fit;
  fit.epochs = 2;
  fit.validation_split = 0.2;
  fit.loader.batch_size = 32;
  fit.loader.workers = 0;
  const std::string dir = std::filesystem::temp_directory_path() / ("bench_trainer_memory." + std::to_string(::getpid()));
  if (backup > 0) {
    BackupAndRestoreOptions b;
    b.backup_dir = dir;
    b.snapshot = backup == 1 ? BackupSnapshot::live : BackupSnapshot::copy;
    fit.callbacks.push_back(std::make_shared<BackupAndRestore>(b));
  }
  trainer.fit(make_synthetic(data), fit);
  std::filesystem::remove_all(dir);
  std::printf("%lld %.3f\n", static_cast<long long>(process_memory().resident_peak / 1024), trainer.measured().stats.step().p50_ms);
  return 0;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Figures {
  double peak_kb = 0, p50_ms = 0;
};

Figures run(const char* self, int64_t classes, int backup, int64_t examples, bool tcmalloc) {
  const std::string command = std::string(tcmalloc ? std::string("LD_PRELOAD=") + kTcmalloc + " " : "") + self + " child " +
                              std::to_string(classes) + " " + std::to_string(backup) + " " + std::to_string(examples);
  FILE* out = ::popen(command.c_str(), "r");
  Figures f;
  if (!out || std::fscanf(out, "%lf %lf", &f.peak_kb, &f.p50_ms) != 2) {
    std::fprintf(stderr, "bench_trainer_memory: %s printed no figures\n", command.c_str());
    std::exit(1);
  }
  ::pclose(out);
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 5 && std::string(argv[1]) == "child") return child(std::atoll(argv[2]), std::atoi(argv[3]), std::atoll(argv[4]));
  const int64_t examples = argc > 1 ? std::atoll(argv[1]) : 4000;
  std::vector<bool> allocators{false};
  if (std::filesystem::exists(kTcmalloc)) allocators.push_back(true);
  const char* backups[] = {"none", "every epoch, live", "every epoch, copy"};
  const double added = 3000.0 * 785;  // parameters from 3,000 to 6,000 classes
  std::printf("allocator  backup                   bytes/parameter   step p50 at 6000 classes\n");
  for (const bool tcmalloc : allocators) {
    for (int backup = 0; backup < 3; ++backup) {
      std::vector<double> per_parameter, p50;
      for (int repeat = 0; repeat < 3; ++repeat) {
        const Figures few = run(argv[0], 3000, backup, examples, tcmalloc), many = run(argv[0], 6000, backup, examples, tcmalloc);
        per_parameter.push_back((many.peak_kb - few.peak_kb) * 1024 / added);
        p50.push_back(many.p50_ms);
      }
      std::printf("%-9s  %-23s  %15.1f   %10.3f ms\n", tcmalloc ? "tcmalloc" : "glibc", backups[backup], median(per_parameter),
                  median(p50));
    }
  }
  std::printf("(Adam's own: 16 bytes a parameter; goal: <= 24 with Adam and backups on; the CLI links tcmalloc)\n");
  return 0;
}
