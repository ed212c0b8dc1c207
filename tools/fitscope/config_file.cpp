#include "config_file.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "flags.hpp"
#include "help.hpp"

namespace fitscope::cli {
namespace {

constexpr std::uintmax_t kMaxConfigBytes = 1u << 20;  // a config of every flag is a few kB

/// Whether `args` hold `flag` as "--flag" or "--flag=...".
bool gives(const std::vector<std::string>& args, const std::string& flag) {
  return std::any_of(args.begin(), args.end(), [&](const std::string& a) { return a == flag || a.rfind(flag + "=", 0) == 0; });
}

/// A TOML value: numbers and true/false as they are, anything else as a quoted string.
std::string toml_value(const std::string& text) {
  if (text == "true" || text == "false") return text;
  char* end = nullptr;
  if (!text.empty() && text.find_first_of("xXpP") == std::string::npos) {
    std::strtod(text.c_str(), &end);
    if (end == text.c_str() + text.size()) return text;
  }
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' || c == '\\' ? std::string("\\") + c : std::string(1, c);
  return quoted + "\"";
}

}  // namespace

std::vector<std::string> with_config_file(const CLI::App& command, const std::vector<std::string>& args) {
  if (args.empty() || args.front() != command.get_name()) return args;
  const std::vector<std::string> own(args.begin() + 1, args.end());  // the command's flags
  std::string path;
  for (std::size_t i = 0; i < own.size(); ++i) {
    if (own[i] == "--config" && i + 1 < own.size()) path = own[i + 1];
    if (own[i].rfind("--config=", 0) == 0) path = own[i].substr(9);
  }
  if (path.empty()) return args;
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && (!std::filesystem::is_regular_file(path, ec) ||
                                            std::filesystem::file_size(path, ec) > kMaxConfigBytes)) {
    throw std::invalid_argument("--config " + path + ": not a regular file of at most 1 MiB (expected a TOML file of flags)");
  }
  std::ifstream in(path);
  if (!in) throw std::invalid_argument("--config " + path + ": cannot be read (expected a TOML file of flags)");
  std::vector<CLI::ConfigItem> items;
  try {
    items = CLI::ConfigTOML().from_config(in);
  } catch (const CLI::ParseError& e) {
    throw std::invalid_argument("--config " + path + ": " + e.what());
  }
  std::vector<std::string> added;
  for (const CLI::ConfigItem& item : items) {
    const std::string where = "--config " + path + ": ";
    if (!item.parents.empty()) {
      throw std::invalid_argument(where + "section [" + item.parents.front() +
                                  "]: the settings are the flags' names at the top of the file, without sections");
    }
    const std::string flag = "--" + item.name;
    const CLI::Option* option = command.get_option_no_throw(flag);
    if (!option || item.name == "config" || item.name == "help") {
      const std::string near = nearest_name(flag, flag_names(command));
      throw std::invalid_argument(where + "unknown setting '" + item.name + "' for fitscope " + command.get_name() +
                                  (near.empty() ? " (the settings are the flags' names without the dashes)"
                                                : " (did you mean " + near.substr(2) + "?)"));
    }
    if (gives(own, flag)) continue;
    if (option->get_expected_max() == 0) {  // a switch
      const std::string value = item.inputs.size() == 1 ? item.inputs.front() : "";
      if (value != "true" && value != "false") {
        throw std::invalid_argument(where + item.name + " = " + value + ": expected true or false");
      }
      if (value == "true") added.push_back(flag);
      continue;
    }
    if (item.inputs.empty()) throw std::invalid_argument(where + item.name + " has no value");
    std::string value = item.inputs.front();
    for (std::size_t i = 1; i < item.inputs.size(); ++i) value += std::string(1, option->get_delimiter() ? option->get_delimiter() : ',') + item.inputs[i];
    added.push_back(flag + "=" + value);
  }
  std::vector<std::string> out = {args.front()};
  out.insert(out.end(), added.begin(), added.end());
  out.insert(out.end(), own.begin(), own.end());
  return out;
}

TrainCommandOptions read_run_config(const std::string& run_dir) {
  const std::string path = (std::filesystem::path(run_dir) / "config.toml").string();
  if (!std::filesystem::exists(path)) {
    throw std::invalid_argument(run_dir + ": no config.toml (not the directory of a run of fitscope train)");
  }
  TrainCommandOptions o;
  CLI::App command("", "train");
  add_train_flags(&command, o, Command::train);
  std::vector<std::string> args = with_config_file(command, {"train", "--config", path});
  args.erase(args.begin());
  std::reverse(args.begin(), args.end());  // CLI11 parses a vector from its end
  try {
    command.parse(args);
  } catch (const CLI::ParseError& e) {
    throw std::invalid_argument(path + ": " + e.what());
  }
  check_flag_relations(o);
  return o;
}

std::string resolved_config(const CLI::App& command, const std::set<std::string>& left_out) {
  std::string out, group;
  for (const CLI::Option* option : command.get_options()) {
    if (option->get_lnames().empty()) continue;
    const std::string& name = option->get_lnames().front();
    if (name == "help" || name == "config" || left_out.count(name)) continue;
    std::vector<std::string> values = option->results();  // given, or else the default's words
    if (option->count() == 0) {
      values.clear();
      std::string word;
      for (char c : option->get_default_str() + " ") {
        if (c == '[' || c == ']' || c == ',' || c == ' ') {
          if (!word.empty()) values.push_back(word);
          word.clear();
        } else {
          word += c;
        }
      }
    }
    std::string value;
    if (option->get_expected_max() == 0) {
      value = option->count() > 0 ? "true" : "false";
    } else if (values.size() == 1 && option->get_delimiter() == '\0') {
      value = toml_value(values.front());
    } else if (!values.empty()) {
      for (const std::string& v : values) value += (value.empty() ? "[" : ", ") + toml_value(v);
      value += "]";
    } else {
      continue;
    }
    if (option->get_group() != group) {
      group = option->get_group();
      out += (out.empty() ? "# " : "\n# ") + group + "\n";
    }
    out += name + " = " + value + "\n";
  }
  return out;
}

}  // namespace fitscope::cli
