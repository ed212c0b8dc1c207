#pragma once
/// How the command line speaks: the help's layout, and the messages for flags it does not know.

#include <CLI/CLI.hpp>

#include <string>

namespace fitscope::cli {

/// Help with the flags in their groups; after each flag, the kind of value it takes (N, X, or its
/// words: adam|adamw|sgd) instead of CLI11's TYPE:check=default notation, then its description wrapped
/// to the width of a terminal and ending with the default.
class HelpFormatter : public CLI::Formatter {
 public:
  HelpFormatter();
  std::string make_option_opts(const CLI::Option* option) const override;
  std::string make_option_desc(const CLI::Option* option) const override;
};

/// The line to print for a parse error of `app` (the whole command line), starting with
/// "fitscope COMMAND: " or "fitscope: ": CLI11's message, or for a word or flag it
/// does not know, which one and the nearest known name ("did you mean --epochs?"), or which other
/// command has that flag.
std::string parse_error_message(const CLI::App& app, const CLI::ParseError& error);

/// A library message with the options it names by their C++ names (RunOptions::run_dir) rendered as
/// the flags that set them (--run-dir).
std::string in_flags(std::string message);

/// A bash completion script for `app`, made from its own table of commands and flags (so it cannot
/// drift from them): the commands after `fitscope`, a command's flags after a dash, files otherwise.
std::string bash_completion(const CLI::App& app);
/// `command`'s flags' long names, with their dashes ("--epochs").
std::vector<std::string> flag_names(const CLI::App& command);

/// The known name nearest to `word` by edit distance, when near enough to be a misspelling; else "".
std::string nearest_name(const std::string& word, const std::vector<std::string>& names);

}  // namespace fitscope::cli
