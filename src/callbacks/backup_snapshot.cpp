#include "fitscope/callbacks/backup_snapshot.hpp"

#include <stdexcept>

namespace fitscope {
namespace {

struct SnapshotName {
  BackupSnapshot snapshot;
  const char* name;
};
constexpr SnapshotName kSnapshotNames[] = {
    {BackupSnapshot::automatic, "auto"}, {BackupSnapshot::copy, "copy"}, {BackupSnapshot::live, "live"}};

}  // namespace

const char* backup_snapshot_name(BackupSnapshot snapshot) {
  for (const SnapshotName& n : kSnapshotNames) {
    if (n.snapshot == snapshot) return n.name;
  }
  return "auto";
}

BackupSnapshot parse_backup_snapshot(const std::string& name) {
  for (const SnapshotName& n : kSnapshotNames) {
    if (name == n.name) return n.snapshot;
  }
  throw std::invalid_argument("backup snapshot '" + name + "' (expected auto, copy or live)");
}

}  // namespace fitscope
