// Checkpoint cost for a model of >= 32 MB (an MLP with a 12000-unit hidden layer: 37.7 MB of weights,
// plus Adam's two moments), side by side in one process:
//  1. the training thread's blocking time for an async checkpoint (copy into the reused buffers)
//     against a synchronous save (encode + write + fsync) of the same state: goal <= 0.1x;
//  2. samples/s with a backup every 50 steps against none, for each BackupSnapshot: goal <= 1 % lost.
//   ./bench_checkpoint_cost [rounds=5]
#include <fitscope/fitscope.hpp>

#include <filesystem>
#include <cstdio>
#include <cstdlib>

#include "rounds.hpp"

using namespace fitscope;

namespace {

std::shared_ptr<Model> big_mlp() {
  torch::nn::Sequential net(torch::nn::Flatten(), torch::nn::Linear(784, 12000), torch::nn::ReLU(),
                            torch::nn::Linear(12000, 10));
  return make_model(net.ptr());
}

double model_mb(Model& m) {
  double bytes = 0;
  for (auto& [name, t] : m.named_state()) bytes += static_cast<double>(t.numel() * t.element_size());
  return bytes / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 5;
  SyntheticOptions data_options;
  data_options.size = 6400;
  const TensorDataset data = make_synthetic(data_options);
  const std::string dir = (std::filesystem::temp_directory_path() / "fitscope-bench-checkpoints").string();
  std::filesystem::remove_all(dir);

  // 1. blocking time: async copy against a synchronous save + fsync
  Trainer trainer(big_mlp());
  FitOptions warm;
  warm.steps_per_epoch = 3;
  warm.loader.workers = 0;
  trainer.fit(data, warm);  // Adam's moments exist from here on
  std::printf("Model: %.1f MB of weights (%.1f MB with Adam's moments)\n", model_mb(trainer.model()),
              3 * model_mb(trainer.model()));
  CheckpointWriterOptions options;
  options.dir = dir;
  options.keep = 2;
  CheckpointWriter writer(options);
  TrainingState scratch;
  std::vector<double> async_ms, sync_ms;
  for (int r = 0; r < rounds + 1; ++r) {
    const double a = bench::seconds([&] {
      trainer.context().capture_state(writer.acquire(), 0, 0);
      writer.submit();
    });
    writer.flush();
    const double s = bench::seconds([&] {
      trainer.context().capture_state(scratch, 0, 0);
      writer.write_now(scratch);
    });
    if (r > 0) {  // the first round allocates the buffers
      async_ms.push_back(1e3 * a);
      sync_ms.push_back(1e3 * s);
    }
  }
  const double a = bench::median(async_ms), s = bench::median(sync_ms);
  std::printf("1. training thread blocked per checkpoint: async %.2f ms, sync save + fsync %.2f ms: x%.3f (goal <= 0.1)\n",
              a, s, a / s);

  // 2. throughput with a backup every 50 steps, for each way a backup holds the state while written
  const BackupSnapshot snapshots[] = {BackupSnapshot::automatic, BackupSnapshot::copy, BackupSnapshot::live};
  std::vector<double> without, with[3];
  std::vector<int64_t> live[3];
  for (int r = 0; r < std::max(1, rounds / 2); ++r) {
    for (int k = -1; k < 3; ++k) {
      Trainer t(big_mlp());
      FitOptions fit;
      fit.steps_per_epoch = 200;
      fit.loader.workers = 1;
      std::shared_ptr<BackupAndRestore> backup;
      if (k >= 0) {
        BackupAndRestoreOptions b;
        b.backup_dir = dir + "/backup";
        b.save_freq = 50;
        b.restore = false;
        b.snapshot = snapshots[k];
        backup = std::make_shared<BackupAndRestore>(b);
        fit.callbacks.push_back(backup);
      }
      t.fit(data, fit);
      (k < 0 ? without : with[k]).push_back(t.measured().stats.samples_per_s());
      if (k >= 0) live[k].push_back(backup->live_backups());
    }
  }
  const double wo = bench::median(without);
  std::printf("2. samples/s with no checkpoints %.0f; with a backup every 50 steps (4 in the fit), by how it holds the state:\n", wo);
  for (int k = 0; k < 3; ++k) {
    const double w = bench::median(with[k]);
    std::printf("   %-4s %.0f: x%.4f, %.2f%% lost (goal <= 1%%), %lld of 4 backups read live\n", backup_snapshot_name(snapshots[k]), w,
                w / wo, 100 * (1 - w / wo), static_cast<long long>(live[k].front()));
  }
  std::filesystem::remove_all(dir);
}
