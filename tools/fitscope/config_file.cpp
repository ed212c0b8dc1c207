#include "config_file.hpp"

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "fitscope/run/run_config.hpp"
#include "fitscope/run/run_directory.hpp"
#include "flags.hpp"
#include "help.hpp"

namespace fitscope::cli {
namespace {

/// Whether `args` hold `flag` as "--flag" or "--flag=...".
bool gives(const std::vector<std::string>& args, const std::string& flag) {
  return std::any_of(args.begin(), args.end(), [&](const std::string& a) { return a == flag || a.rfind(flag + "=", 0) == 0; });
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
  ConfigSettings settings;
  try {
    settings = read_config(path);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("--config ") + e.what());
  }
  std::vector<std::string> added;
  for (const auto& [name, values] : settings) {
    const std::string where = "--config " + path + ": " + name;
    const std::string flag = "--" + name;
    const CLI::Option* option = command.get_option_no_throw(flag);
    if (!option || name == "config" || name == "help") {
      const std::string near = nearest_name(flag, flag_names(command));
      throw std::invalid_argument("--config " + path + ": unknown setting '" + name + "' for fitscope " + command.get_name() +
                                  (near.empty() ? " (the settings are the flags' names without the dashes)"
                                                : " (did you mean " + near.substr(2) + "?)"));
    }
    if (gives(own, flag)) continue;
    if (option->get_expected_max() == 0) {  // a switch
      const std::string value = values.size() == 1 ? values.front() : "";
      if (value != "true" && value != "false") throw std::invalid_argument(where + " = " + value + ": expected true or false");
      if (value == "true") added.push_back(flag);
      continue;
    }
    if (values.empty()) throw std::invalid_argument(where + " has no value");
    std::string value = values.front();
    for (std::size_t i = 1; i < values.size(); ++i) value += std::string(1, option->get_delimiter() ? option->get_delimiter() : ',') + values[i];
    added.push_back(flag + "=" + value);
  }
  std::vector<std::string> out = {args.front()};
  out.insert(out.end(), added.begin(), added.end());
  out.insert(out.end(), own.begin(), own.end());
  return out;
}

TrainCommandOptions read_run_config(const std::string& run_dir) {
  const std::string path = RunDirectory(run_dir).config();
  if (!std::filesystem::exists(path)) {
    throw std::invalid_argument(run_dir + ": no " + RunDirectory::kConfig + " (not the directory of a run of fitscope train)");
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

std::string resolved_config(const CLI::App& command, const std::set<std::string>& left_out,
                            const std::map<std::string, std::string>& used) {
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
      value = config_value(values.front());
    } else if (!values.empty()) {
      for (const std::string& v : values) value += (value.empty() ? "[" : ", ") + config_value(v);
      value += "]";
    } else {
      continue;
    }
    if (option->get_group() != group) {
      group = option->get_group();
      out += (out.empty() ? "# " : "\n# ") + group + "\n";
    }
    const auto in_use = used.find(name);
    if (in_use != used.end() && config_value(in_use->second) != value) {
      out += name + " = " + config_value(in_use->second) + "  # asked: " + value + "\n";
    } else {
      out += name + " = " + value + "\n";
    }
  }
  return out;
}

}  // namespace fitscope::cli
