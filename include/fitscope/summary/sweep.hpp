#pragma once
/// The batch-size sweep's analysis (seed 003's question, "why are small batches slower?", in numbers):
/// per batch size the throughput, measured in repeated windows, and the step distribution; a least-squares
/// fit of the median step time (what the report plots) against the batch size, step_ms = fixed_ms +
/// per_sample_ms * batch, both costs >= 0, which separates the per-step fixed overhead from the
/// per-example cost; and the knee, the smallest batch size that reaches 90 % of the best throughput,
/// with whether the windows' spread lets it be told apart from its neighbours. Pure functions;
/// thread-safe.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fitscope {

struct SweepRow {
  int64_t batch_size = 0;
  double samples_per_s = 0;     ///< the median of the windows' throughputs (or the one measurement)
  std::vector<double> windows;  ///< each window's samples/s, in the order the rounds ran (may be empty)
  int64_t steps = 0;            ///< measured steps over all windows
  double step_ms_mean = 0;
  double step_ms_p50 = 0;
  double step_ms_p99 = 0;
  double data_wait_share = 0;
  std::string verdict;  ///< "<level> <bound>", e.g. "highly overhead"
  /// The compute threads it ran with, e.g. "1+1 auto": intra-op + BLAS, and how they were chosen
  /// (auto: the batch size's own thread search; flag: --threads).
  std::string threads;
  /// The steps' tensor memory (on a GPU the caching allocator's): what they hold above the fit's start plus their peak within one, the
  /// largest window's, in MB (0: not counted). The memory budget compares with it.
  double memory_mb = 0;
  bool out_of_memory = false;  ///< the batch size ran out of memory: no throughput; `failure` says how
  std::string failure;
  bool checked = false;  ///< the one run at the batch size the memory curve predicts within a budget

  /// Stores each window's samples/s (in round order) and sets samples_per_s to their median.
  void set_windows(std::vector<double> samples_per_s_by_window);
  /// The lowest and highest window's samples/s (samples_per_s without windows). With 5 windows the
  /// range holds the median with 94 % confidence (1 - 2 * 0.5^5).
  double low() const;
  double high() const;
  /// (high - low) / median: how far apart the windows were (0 for one window).
  double spread() const { return samples_per_s > 0 ? (high() - low()) / samples_per_s : 0; }
};

/// A row whose spread is above this is flagged "wide": its throughput is not a number to compare.
inline constexpr double kWideSpread = 0.2;

struct StepTimeFit {
  double fixed_ms = 0;       ///< per-step cost independent of the batch size
  double per_sample_ms = 0;  ///< cost of one more example in the batch
};

/// The knee and whether the windows resolve it. Each batch size is compared with the best (the highest
/// median) window by window: the rounds ran the batch sizes in turn, so round i's windows shared the
/// machine's state, and the ratio of the two throughputs in each round cancels its drift. The range of
/// those ratios holds their median with 94 % confidence for 5 windows; a batch size is surely below
/// `fraction` when every ratio is, and surely reaches it when every ratio does. Rows measured without
/// windows (or with a different count than the best) compare their low-high range with the best median.
struct Knee {
  int64_t batch_size = 0;  ///< the smallest batch whose median ratio to the best reaches `fraction`
  bool resolved = true;    ///< every smaller batch is surely below, and this one surely reaches
  /// When not resolved, the knee lies somewhere in [lowest, highest]: lowest is the smallest batch not
  /// surely below, highest the smallest that surely reaches. Both equal batch_size when resolved.
  int64_t lowest = 0, highest = 0;
};

/// Least squares over the rows' medians with both coefficients >= 0; nothing when fewer than two
/// distinct batch sizes.
std::optional<StepTimeFit> fit_step_time(const std::vector<SweepRow>& rows);
/// The knee at `fraction` of the best samples/s; throws std::invalid_argument when there are no rows.
Knee find_knee(const std::vector<SweepRow>& rows, double fraction = 0.9);

/// The steps' memory against the batch size: memory_mb = fixed_mb + per_sample_mb x batch size.
struct MemoryCurve {
  double fixed_mb = 0, per_sample_mb = 0;
  /// The largest batch size within `budget_mb` (0: none).
  int64_t largest_within(double budget_mb) const;
};

/// Least squares over the rows whose memory was counted (and that did not run out of it); nothing with
/// fewer than two distinct batch sizes or a curve that does not grow.
std::optional<MemoryCurve> fit_memory(const std::vector<SweepRow>& rows);

/// The fastest batch size within a memory budget (SweepOptions::memory_budget_bytes).
struct MemoryBudgetChoice {
  double budget_mb = 0;
  std::optional<MemoryCurve> curve;
  int64_t predicted = 0;  ///< the largest batch size the curve predicts within the budget (0: none)
  int64_t chosen = 0;     ///< the fastest measured batch size within the budget (0: none fits)
  std::string text;       ///< the choice in a sentence
};
/// Chooses among the rows measured within the budget (the checked row among them).
MemoryBudgetChoice choose_within_budget(const std::vector<SweepRow>& rows, double budget_mb);

/// How a sweep measured each batch size (written to sweep.json for the reader).
struct SweepMethod {
  int64_t windows = 1;        ///< windows per batch size, the batch sizes taking turns
  double window_seconds = 0;  ///< each window at least this long...
  int64_t window_steps = 0;   ///< ...and at least this many measured steps
};

/// sweep.json: {"model", "method": {...}, "rows": [...], "fit": {...} | null, "knee_batch_size": int,
/// "knee": {"resolved", "lowest", "highest"}}.
std::string sweep_json(const std::vector<SweepRow>& rows, const std::string& model, const SweepMethod& method,
                       const std::optional<MemoryBudgetChoice>& budget = std::nullopt);
/// sweep.csv: a header and one row per batch size.
std::string sweep_csv(const std::vector<SweepRow>& rows);
/// The terminal table, knee and wide rows marked, with the knee's resolution and the fit below.
std::string format_sweep(const std::vector<SweepRow>& rows);
/// The knee in a sentence: "Knee at batch size 64: ..." or "Knee not resolved: between 32 and 128 ...".
std::string describe_knee(const Knee& knee);

}  // namespace fitscope
