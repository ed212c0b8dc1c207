#pragma once
/// `--config FILE`: a command's flags from a TOML file (`epochs = 5`, `lr-schedule = "cosine"`,
/// `class-weight = [1, 1, 2]`, `cache = true`: the flags' names without the dashes), and the resolved
/// settings of a command written back in that form (a run's config.toml), so that
/// `fitscope train --config RUN_DIR/config.toml` repeats the run.

#include <CLI/CLI.hpp>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "train_command.hpp"

namespace fitscope::cli {

/// `args` (the command line without the program's name) with the settings of the `--config FILE`
/// given to `command` put in as flags right after the command's word, except those the command line
/// gives itself: the command line wins. Unchanged without --config or when `args` are another command's
/// (`args` start with the command's word). Throws std::invalid_argument naming
/// the file and the setting for a file that cannot be read, an unknown setting or a bad flag value.
std::vector<std::string> with_config_file(const CLI::App& command, const std::vector<std::string>& args);

/// The train options in `run_dir`/config.toml (defaults for what it does not set). Throws
/// std::invalid_argument naming the file when there is none or it does not parse.
TrainCommandOptions read_run_config(const std::string& run_dir);

/// `command`'s settings after parsing as TOML: every flag with a value (given, from a config file, or
/// its default; a switch as true or false) in the help's order, under a comment naming its group,
/// but those in `left_out` (names without dashes). A setting named in `used` is written with that
/// value (the run's choice for an `auto`, a path made absolute), what was asked beside it as a
/// comment when they differ.
std::string resolved_config(const CLI::App& command, const std::set<std::string>& left_out,
                            const std::map<std::string, std::string>& used = {});

}  // namespace fitscope::cli
