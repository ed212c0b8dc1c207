// distributed_checkpoint: checkpoints need synchronised weights and one writer (seed 002).
// Every rank restores from the backup directory (when one exists) and trains; the gradients are
// averaged, so the weights are the same everywhere and rank 0 alone writes the backups, atomically,
// with retries. Kill the run and start it again: it resumes where the last backup was taken.
// Run: fitscope launch --nproc-per-node 2 -- ./distributed_checkpoint [BACKUP_DIR]

#include <torch/torch.h>

#include <iostream>

#include "fitscope/fitscope.hpp"

int main(int argc, char** argv) {
  using namespace fitscope;
  const std::string dir = argc > 1 ? argv[1] : "distributed_checkpoint_backup";
  auto context = distributed::context_from_environment();
  TrainerOptions options;
  options.context = context;
  Trainer trainer(models::Mlp(28 * 28, 10), options);
  BackupAndRestoreOptions backup;
  backup.backup_dir = dir;
  backup.save_freq = 50;  // every 50 steps, mid-epoch
  auto backups = std::make_shared<BackupAndRestore>(backup);
  FitOptions fit;
  fit.epochs = 3;
  fit.callbacks = {backups};
  SyntheticOptions data;
  data.size = 8000;
  trainer.fit(make_synthetic(data), fit);
  if (context->is_chief()) {
    if (backups->restored()) std::cout << "resumed from the backup of step " << *backups->restored_step() << "\n";
    std::cout << "backups written by rank 0: " << backups->stats().written << "\n";
  }
  return 0;
}
