#include "fitscope/run/run_config.hpp"

#include <toml++/toml.h>

#include <cctype>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace fitscope {
namespace {

constexpr std::uintmax_t kMaxConfigBytes = 1u << 20;  // a config of every flag is a few kB

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

ConfigSettings parse_config(const std::string& text, const std::string& path) {
  toml::table settings;
  try {
    settings = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    throw std::invalid_argument(path + ": line " + std::to_string(e.source().begin.line) + ", column " +
                                std::to_string(e.source().begin.column) + ": " + std::string(e.description()) +
                                " (expected TOML: name = value lines)");
  }
  ConfigSettings out;
  for (const auto& [key, node] : settings) {
    const std::string name(key.str());
    const std::string where = path + ": " + name;
    if (const auto* section = node.as_table(); section && !section->is_inline()) {
      throw std::invalid_argument(path + ": section [" + name +
                                  "]: the settings are the flags' names at the top of the file, without sections");
    }
    std::vector<std::string> values;
    if (const auto* list = node.as_array()) {
      for (const toml::node& element : *list) values.push_back(flag_text(element, where));
    } else {
      values.push_back(flag_text(node, where));
    }
    // a command line cannot hold a NUL, and a path read up to one names another file (csv:a\0b.csv is a)
    for (const std::string& value : values) {
      if (const std::size_t nul = value.find('\0'); nul != std::string::npos) {
        throw std::invalid_argument(where + ": a NUL byte at offset " + std::to_string(nul) +
                                    " of the value (expected text without one: no path or name holds it)");
      }
    }
    out.emplace_back(name, std::move(values));
  }
  return out;
}

ConfigSettings read_config(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec) &&
      (!std::filesystem::is_regular_file(path, ec) || std::filesystem::file_size(path, ec) > kMaxConfigBytes)) {
    throw std::invalid_argument(path + ": not a regular file of at most 1 MiB (expected a TOML file of flags)");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument(path + ": cannot be read (expected a TOML file of flags)");
  return parse_config(std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()), path);
}

std::string config_value(const std::string& word) { return toml_value(word); }

}  // namespace fitscope
