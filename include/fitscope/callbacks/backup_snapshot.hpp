#pragma once
/// BackupSnapshot: how a backup holds the training state while it is written in the background
/// (BackupAndRestoreOptions::snapshot): a copy, the live state itself, or chosen by what each costs.

#include <string>

namespace fitscope {

enum class BackupSnapshot { automatic, copy, live };

/// "auto", "copy", "live"
const char* backup_snapshot_name(BackupSnapshot snapshot);
/// Throws std::invalid_argument naming the value and the names expected.
BackupSnapshot parse_backup_snapshot(const std::string& name);

}  // namespace fitscope
