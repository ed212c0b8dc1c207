#pragma once
/// Comparison: where run B's step time differs from run A's, part by part (the phases, each rank's own
/// work, the callbacks by name and hook), each difference with a confidence interval, so that "no
/// significant change" is a possible answer; the settings that differ and the two verdicts beside it.
///
/// The method when A is one run, batch means: each run's measured steps (after warm-up) are cut into
/// `segments` consecutive stretches of equal length, and a part is summarised by the mean of each
/// stretch. Step times are skewed (rare long steps) and autocorrelated (a busy machine slows many steps
/// in a row), so single steps are neither normal nor independent, and a bootstrap over single steps
/// understates the spread; the means of long stretches are close to normal and close to independent,
/// and they carry the run's slow drift (other load coming and going) into the interval. A part's change
/// is the difference of the two runs' means; its interval is Welch's t over the stretches' means. Two
/// runs of the same settings still differ by more than either run's steps say, so a change is called
/// one only beyond a noise floor (ComparisonOptions::noise_floor).
///
/// The method when B is repeated too (runs of A and of B): Welch's t over the runs' means, each run one
/// value; runs of A and B made in turn share the machine's drift, which runs of A made apart from B do
/// not (docs/decisions.md).
///
/// The method when A is repeated (several runs of A's settings): the spread between runs is measured
/// instead of assumed. A part's change is B's mean less the mean of A's runs' means; its interval is the
/// prediction interval of one more run of A's settings (compare_to_repeats): B is called changed when
/// its mean lies where a run of A's settings would land only 1 - confidence of the time. Each part gets
/// its own spread, so a quiet part (data_wait, callbacks) shows a small change that a noisy one
/// (forward on a busy machine) would hide.
///
/// A rank's parts, in a data-parallel run, are its phases less the other ranks' mean of each phase in
/// the same stretch (`comm` aside, where ranks wait for one another): load that slows every rank alike
/// cancels, and so does a compute phase's noise where the delay is elsewhere (a rank's slow loader is
/// its data_wait, quiet in every other run). The step's change is judged at `confidence`; the parts at
/// a joint confidence (Bonferroni over the parts compared, two ranks' mirror-image parts once), so that
/// the attribution is not a lottery over a dozen columns. Means, unlike medians, add up: the phases'
/// changes sum to the step's. The intervals themselves are summary/intervals.hpp's. Values; pure
/// functions; thread-safe.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "fitscope/summary/intervals.hpp"

namespace fitscope {

/// A part of the step compared: a phase of the chief's step, or a phase of one rank's step less the
/// other ranks' mean of that phase in the same stretch (data-parallel runs; not `comm`, where ranks
/// wait for one another).
struct PartChange {
  std::string part;  ///< "data_wait", "rank 1 data_wait"
  std::string kind;  ///< "phase" | "rank"
  Difference difference;
  double share_of_change = 0;  ///< change / the step's change (phases only; 0 when the step did not change)
};

/// A callback hook's cost per training step in both runs; a callback's calls are not kept one by one,
/// so it has no interval: it says which callback within a changed `callbacks` phase changed.
struct CallbackChange {
  std::string name, hook;
  double a_ms_per_step = 0, b_ms_per_step = 0;
};

/// A setting that differs: from config.toml, or what summary.json says the run chose.
struct SettingChange {
  std::string name, a, b;
  std::string source;  ///< "config.toml" | "summary.json"
};

/// A callback hook's cost per training step in one run (summary.json's callbacks: total_ms / steps).
struct CallbackCost {
  std::string name, hook;
  double ms_per_step = 0;
};

/// A setting of one run, and where it was read.
struct RunSetting {
  std::string name, value;
  std::string source;  ///< "config.toml" | "summary.json"
};

/// What the comparison read of one run.
struct ComparedRun {
  std::string directory;
  std::string model, data;
  int64_t measured_steps = 0;
  double step_p50_ms = 0, samples_per_s = 0;
  std::string verdict;  ///< its headline and advice
  std::string machine;  ///< the machine's load it met (its verdict's `machine`): "" when none reached its mark
};

/// One run's parts as the comparison reads them (run/compare_runs.hpp fills it from a run directory).
struct RunSeries {
  ComparedRun run;
  SegmentedSeries step{0, 2};
  std::vector<std::pair<std::string, SegmentedSeries>> phases;  ///< in step order
  /// Each rank's phases (data-parallel runs: every rank's rows of steps.csv), by rank.
  struct Rank {
    int64_t rank = 0;
    std::vector<std::pair<std::string, SegmentedSeries>> phases;
  };
  std::vector<Rank> ranks;
  std::vector<CallbackCost> callbacks;
  std::vector<RunSetting> settings;
};

struct ComparisonOptions {
  double confidence = 0.95;
  int segments = 10;
  /// A part whose mean is below this share of A's mean step in every run is not judged: its change could
  /// not move the step by as much (a phase that does not run, or one of a few microseconds whose steps.csv
  /// figures are rounded to the same value in every run).
  double min_part_share = 0.01;
  /// The machine's run-to-run noise, as a share of A's mean step: a change (the step's or a part's) is
  /// called one only when its interval lies beyond +-noise_floor of A's step. Two runs of the same
  /// settings differ by more than either run's own steps say (the machine's load, its clock and the
  /// process's memory layout change from run to run, and within one run they do not): on the 2-core
  /// machine this was measured on, identical runs of the seed CNN differed by up to ~5 % of the step
  /// (docs/benchmarks.md, "Comparing two runs"). Compare two runs of the same settings to see yours;
  /// 0 judges by the intervals alone. Not used when a side is several runs: their spread is measured.
  double noise_floor = 0.03;
};

struct Comparison {
  ComparedRun a, b;               ///< A: its first run when A is repeated
  std::vector<ComparedRun> repeats_of_a;  ///< A's other runs of the same settings (empty: A is one run)
  std::vector<ComparedRun> repeats_of_b;  ///< B's likewise
  double confidence = 0.95;       ///< of the step's interval
  double part_confidence = 0.95;  ///< of each part's, joint over the part_family comparisons
  /// The comparisons the parts' joint confidence is over: one a part, except that two ranks' parts of a
  /// phase are one comparison seen from either side (rank 0's less rank 1's is minus rank 1's less rank 0's).
  int part_family = 0;
  int segments = 0;               ///< stretches per run
  double noise_floor_ms = 0;      ///< ComparisonOptions::noise_floor of A's mean step (0 when repeated())
  double min_part_share = 0;      ///< ComparisonOptions::min_part_share
  Difference step;
  std::vector<PartChange> parts;  ///< significant ones first, the largest change first
  std::vector<CallbackChange> callbacks;  ///< the largest change first
  std::vector<SettingChange> settings;

  /// "slower" | "faster" | "no significant change"
  std::string direction() const;
  /// The part the step's change is attributed to: the largest significant change in the step's
  /// direction, a rank's own work before the `comm` phase it makes the others wait in; "" when the
  /// step did not change significantly or no part did.
  std::string attributed_to() const;
  /// The part that grew the most (significantly; by the same rule), whatever the step did: what got
  /// slower in B even where other parts got faster (another run's noise in the compute, a cause and a
  /// cure at once); "" when none grew.
  std::string largest_increase() const;
  /// The step's change relative to A's mean step, and the interval's ends, as fractions.
  double change_fraction() const;
  std::pair<double, double> change_fraction_interval() const;
  /// The callbacks whose cost per step changed by 0.005 ms or more, the largest change first, at most 8:
  /// the ones the printout and the page list.
  std::vector<const CallbackChange*> changed_callbacks() const;
  /// The runs that met the machine's load (other processes on their cores, a CPU quota: their verdict's
  /// `machine`), each with its side, "A" or "B", A's first: such a run's figures measure the load as much
  /// as its settings, and widen the interval or move the change; the printout and the page name them.
  std::vector<std::pair<std::string, const ComparedRun*>> loaded_runs() const;
  /// How many runs A is: 1 + repeats_of_a.
  int runs_of_a() const { return 1 + static_cast<int>(repeats_of_a.size()); }
  int runs_of_b() const { return 1 + static_cast<int>(repeats_of_b.size()); }
  /// Either side is several runs: the intervals come from the runs' spread, not from batch means.
  bool repeated() const { return !repeats_of_a.empty() || !repeats_of_b.empty(); }
  /// How the intervals were made and when a change is called one, in words (the printout's and the page's).
  std::string method() const;
  /// What a change must exceed to be called one, in words: "the noise floor of +-0.150 ms" or "the spread
  /// of A's 3 runs".
  std::string noise_text() const;
  /// The comparison as JSON (the `fitscope compare --json` file).
  std::string to_json() const;
};

/// Compares two runs' series; the settings that differ are those whose values are not the same.
Comparison compare(const RunSeries& a, const RunSeries& b, const ComparisonOptions& options = {});
/// Runs of A's settings against runs of B's (each one or more; the first of each is the one whose
/// settings and verdict are shown): with several runs of A and one of B, the prediction interval of
/// A's runs; with two or more on each side, Welch's t over the runs' means, which holds against a
/// machine whose speed drifts between runs when the runs of A and B are made in turn (A1 B1 A2 B2 ...).
/// Throws std::invalid_argument when a side is empty.
Comparison compare(const std::vector<RunSeries>& a, const std::vector<RunSeries>& b, const ComparisonOptions& options = {});

/// The comparison in words and tables: tables within 80 columns, each sentence one line, for
/// wrap_to_width (summary/summary_printout.hpp) to fit a terminal.
std::string format_comparison(const Comparison& c);

}  // namespace fitscope
