#pragma once
/// The flags of `fitscope train` and `fitscope sweep`, in the help's groups, bound to the option
/// structs they fill.

#include <CLI/CLI.hpp>

#include "flag_values.hpp"
#include "train_command.hpp"

namespace fitscope::cli {

enum class Command { train, sweep };

/// Adds `command`'s flags, each filling a field of `o`: train gets them all; sweep the model, data,
/// optimisation and timing flags, which shape the step it measures, but none of a run's length,
/// validation, schedule, checkpoints or output files (sweep's own flags are added by main).
void add_train_flags(CLI::App* command, TrainCommandOptions& o, Command which);

/// Throws std::invalid_argument for flags whose values contradict each other, that set what nothing
/// uses (--lr-warmup without --lr-schedule) or that another needs (--lr-schedule step without
/// --lr-decay-every): checked on the values, so a config file that writes every default does not trip it.
void check_flag_relations(const TrainCommandOptions& o);

}  // namespace fitscope::cli
