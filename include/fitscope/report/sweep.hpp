#pragma once
/// The batch-size sweep's analysis (seed 003's question, "why are small batches slower?", in numbers):
/// per batch size the throughput and step distribution; a least-squares fit of the median step time
/// (what the report plots) against the batch size, step_ms = fixed_ms + per_sample_ms * batch, both
/// costs >= 0, which separates the per-step fixed overhead from the per-example cost; and the knee, the smallest batch size that reaches 90 %
/// of the best throughput. Pure functions; thread-safe.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fitscope {

struct SweepRow {
  int64_t batch_size = 0;
  double samples_per_s = 0;
  double step_ms_mean = 0;
  double step_ms_p50 = 0;
  double step_ms_p99 = 0;
  double data_wait_share = 0;
  std::string verdict;  ///< "<level> <bound>", e.g. "highly overhead"
};

struct StepTimeFit {
  double fixed_ms = 0;       ///< per-step cost independent of the batch size
  double per_sample_ms = 0;  ///< cost of one more example in the batch
};

/// Least squares over the rows' medians with both coefficients >= 0; nothing when fewer than two
/// distinct batch sizes.
std::optional<StepTimeFit> fit_step_time(const std::vector<SweepRow>& rows);
/// The smallest batch size with samples/s >= `fraction` of the best; throws std::invalid_argument
/// when there are no rows.
int64_t knee_batch_size(const std::vector<SweepRow>& rows, double fraction = 0.9);

/// sweep.json: {"rows": [...], "fit": {...} | null, "knee_batch_size": int, "model", "steps"}.
std::string sweep_json(const std::vector<SweepRow>& rows, const std::string& model, int64_t steps);
/// sweep.csv: a header and one row per batch size.
std::string sweep_csv(const std::vector<SweepRow>& rows);
/// The terminal table, knee marked, with the fit below.
std::string format_sweep(const std::vector<SweepRow>& rows);

}  // namespace fitscope
