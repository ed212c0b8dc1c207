#pragma once
/// The flags of `fitscope train` and `fitscope sweep`, in the help's groups, bound to the option
/// structs they fill.

#include <CLI/CLI.hpp>

#include "train_command.hpp"

namespace fitscope::cli {

enum class Command { train, sweep };

/// A check for whole numbers in [low, high] ("expected an integer in [1, 1000000], got 'abc' (not a
/// number)"); the help calls the value N.
CLI::Validator integer_in(int64_t low, int64_t high);
/// A check for finite numbers above `bound` (or at it, when `inclusive`) and at most `max`, saying
/// "expected <expected>, got '<value>'"; the help calls the value X.
CLI::Validator number_above(double bound, bool inclusive, const std::string& expected, double max = 1e300);

/// Adds a HEIGHT,WIDTH flag (one number for a square), each side in [smallest, 16384].
CLI::Option* add_size_flag(CLI::App* command, const std::string& flag, int64_t& height, int64_t& width, int64_t smallest,
                           const std::string& help);

/// Adds `command`'s flags, each filling a field of `o`: train gets them all; sweep the model, data,
/// optimisation and timing flags, which shape the step it measures, but none of a run's length,
/// validation, schedule, checkpoints or output files (sweep's own flags are added by main).
void add_train_flags(CLI::App* command, TrainCommandOptions& o, Command which);

/// Throws std::invalid_argument for flags whose values contradict each other or that set what
/// nothing uses (--lr-warmup without --lr-schedule): checked on the values, so a config file that
/// writes every default does not trip it.
void check_flag_relations(const TrainCommandOptions& o);

}  // namespace fitscope::cli
