#pragma once
/// config.toml's syntax: a run's settings as `name = value` lines of TOML at the top of the file (no
/// sections), each value read back as the words a flag takes: numbers, true and false as written,
/// text as it is, a list as its elements, and text that is not UTF-8 (a path's bytes) through
/// `{ percent_encoded = "..." }` (its bytes from 0x80, and '%', as %XX). What the settings mean is
/// their reader's: RunSpec::from_config, and the CLI's flag table.

#include <string>
#include <utility>
#include <vector>

namespace fitscope {

/// Settings by name (TOML keeps a table sorted): a name and its values (one, or a list's elements).
using ConfigSettings = std::vector<std::pair<std::string, std::vector<std::string>>>;

/// The settings of a config.toml's `text`. Throws std::invalid_argument starting with `path`: the line
/// and column of a TOML error, a section, or a value of another kind than those above.
ConfigSettings parse_config(const std::string& text, const std::string& path);

/// The settings of the config.toml at `path`: as parse_config; also refused (std::invalid_argument)
/// when it is missing, not a regular file, or above 1 MiB.
ConfigSettings read_config(const std::string& path);

/// A flag's word as config.toml writes it: a number or true/false as it is, text as a TOML basic
/// string (escaped), text that is not UTF-8 percent-encoded.
std::string config_value(const std::string& word);

}  // namespace fitscope
