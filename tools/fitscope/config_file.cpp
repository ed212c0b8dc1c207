#include "config_file.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "fitscope/run/run_directory.hpp"
#include "flags.hpp"
#include "help.hpp"

namespace fitscope::cli {
namespace {

constexpr std::uintmax_t kMaxConfigBytes = 1u << 20;  // a config of every flag is a few kB

/// Whether `args` hold `flag` as "--flag" or "--flag=...".
bool gives(const std::vector<std::string>& args, const std::string& flag) {
  return std::any_of(args.begin(), args.end(), [&](const std::string& a) { return a == flag || a.rfind(flag + "=", 0) == 0; });
}

/// Whether `text` is valid UTF-8 (TOML's strings must be).
bool is_utf8(const std::string& text) {
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    const std::size_t length = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    if (length == 0 || i + length > text.size()) return false;
    uint32_t point = length == 1 ? c : c & (0x7f >> length);
    for (std::size_t k = 1; k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xc0) != 0x80) return false;
      point = (point << 6) | (next & 0x3f);
    }
    const uint32_t smallest[] = {0, 0, 0x80, 0x800, 0x10000};
    if (point < smallest[length] || point > 0x10ffff || (point >= 0xd800 && point <= 0xdfff)) return false;
    i += length;
  }
  return true;
}

constexpr const char* kPercentKey = "percent_encoded";

/// A TOML value: numbers and true/false as they are, text as a TOML string (quoted and escaped as
/// TOML needs: `#`, quotes, backslashes and newlines read back as they were). Text that is not UTF-8
/// (a path's bytes) becomes `{ percent_encoded = "..." }`: its bytes from 0x80 and '%' as %XX.
std::string toml_value(const std::string& text) {
  if (text == "true" || text == "false") return text;
  char* end = nullptr;
  if (!text.empty() && text.find_first_of("xXpP") == std::string::npos) {
    std::strtod(text.c_str(), &end);
    if (end == text.c_str() + text.size()) return text;
  }
  if (!is_utf8(text)) {
    std::string encoded;
    for (char c : text) {
      const auto b = static_cast<unsigned char>(c);
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", b);
      encoded += b >= 0x80 || c == '%' ? std::string(hex) : std::string(1, c);
    }
    return std::string("{ ") + kPercentKey + " = " + toml_value(encoded) + " }";
  }
  // a basic string, escaped ("\n" for a newline), as the README shows settings
  constexpr auto flags = toml::toml_formatter::default_flags &
                         ~(toml::format_flags::allow_literal_strings | toml::format_flags::allow_multi_line_strings);
  const toml::value<std::string> value(text);
  std::ostringstream out;
  out << toml::toml_formatter{value, flags};
  return out.str();
}

/// A TOML value of config.toml back as a flag's text, `where` naming the file and the setting.
std::string flag_text(const toml::node& node, const std::string& where) {
  if (const auto* text = node.as_string()) return text->get();
  if (const auto* yes = node.as_boolean()) return yes->get() ? "true" : "false";
  if (const auto* integer = node.as_integer()) return std::to_string(integer->get());
  if (const auto* number = node.as_floating_point()) {
    char digits[64];
    const auto written = std::to_chars(digits, digits + sizeof digits, number->get());  // the shortest that reads back
    return std::string(digits, written.ptr);
  }
  if (const auto* table = node.as_table(); table && table->is_inline() && table->size() == 1) {
    if (const auto* encoded = table->get_as<std::string>(kPercentKey)) {
      std::string bytes;
      const std::string& e = encoded->get();
      for (std::size_t i = 0; i < e.size(); ++i) {
        if (e[i] == '%' && i + 2 < e.size() && std::isxdigit(static_cast<unsigned char>(e[i + 1])) &&
            std::isxdigit(static_cast<unsigned char>(e[i + 2]))) {
          bytes += static_cast<char>(std::stoi(e.substr(i + 1, 2), nullptr, 16));
          i += 2;
        } else {
          bytes += e[i];
        }
      }
      return bytes;
    }
  }
  throw std::invalid_argument(where + ": expected a number, true or false, a string, a list of them, or { " +
                              kPercentKey + " = \"...\" }");
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
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument("--config " + path + ": cannot be read (expected a TOML file of flags)");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  toml::table settings;
  try {
    settings = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    throw std::invalid_argument("--config " + path + ": line " + std::to_string(e.source().begin.line) + ", column " +
                                std::to_string(e.source().begin.column) + ": " + std::string(e.description()) +
                                " (expected TOML: name = value lines)");
  }
  std::vector<std::string> added;
  for (const auto& [key, node] : settings) {
    const std::string name(key.str());
    const std::string where = "--config " + path + ": " + name;
    if (const auto* section = node.as_table(); section && !section->is_inline()) {
      throw std::invalid_argument("--config " + path + ": section [" + name +
                                  "]: the settings are the flags' names at the top of the file, without sections");
    }
    const std::string flag = "--" + name;
    const CLI::Option* option = command.get_option_no_throw(flag);
    if (!option || name == "config" || name == "help") {
      const std::string near = nearest_name(flag, flag_names(command));
      throw std::invalid_argument("--config " + path + ": unknown setting '" + name + "' for fitscope " + command.get_name() +
                                  (near.empty() ? " (the settings are the flags' names without the dashes)"
                                                : " (did you mean " + near.substr(2) + "?)"));
    }
    std::vector<std::string> values;
    if (const auto* list = node.as_array()) {
      for (const toml::node& element : *list) values.push_back(flag_text(element, where));
    } else {
      values.push_back(flag_text(node, where));
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
    const auto in_use = used.find(name);
    if (in_use != used.end() && toml_value(in_use->second) != value) {
      out += name + " = " + toml_value(in_use->second) + "  # asked: " + value + "\n";
    } else {
      out += name + " = " + value + "\n";
    }
  }
  return out;
}

}  // namespace fitscope::cli
