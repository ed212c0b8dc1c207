#pragma once
/// What a restarted rank learns of its job's earlier attempts: `fitscope launch --max-restarts` puts it
/// in FITSCOPE_RESTARTS (JSON) for every rank it starts again, and `Run` turns it into summary.json's
/// `restarts`. Values; pure functions but restart_history_from_environment; libtorch-free.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fitscope::distributed {

/// One restart of the group, after one attempt failed.
struct RestartRecord {
  std::string reason;                        ///< the failure, as the launcher named it
  std::optional<int64_t> failed_at_step;     ///< the furthest step a rank of the failed attempt reported
  std::optional<int64_t> resumed_from_step;  ///< where the next attempt resumed; unset while not known
  double lost_since_unix_s = 0;              ///< when the state the next attempt resumes from was first reached
  std::optional<double> lost_s;              ///< from then until the next attempt trained again; unset while not known
};

struct RestartHistory {
  double job_started_unix_s = 0;  ///< when the launcher started the first attempt
  std::vector<RestartRecord> restarts;

  std::string to_json() const;
  /// Throws std::invalid_argument naming `source` and the key that is missing or of the wrong type.
  static RestartHistory from_json(const std::string& text, const std::string& source);
};

/// The history in FITSCOPE_RESTARTS; nothing when the variable is unset (not restarted).
std::optional<RestartHistory> restart_history_from_environment();

}  // namespace fitscope::distributed
