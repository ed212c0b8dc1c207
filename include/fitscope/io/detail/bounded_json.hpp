#pragma once
// Internal (summary/ and report/ use it; not in fitscope.hpp): JSON read from a file a user may have
// edited (summary.json, sweep.json): nesting is bounded, so a crafted file cannot exhaust the stack of
// the code that walks or prints it, and every error is std::invalid_argument naming the file.

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>

namespace fitscope::detail {

constexpr int kMaxJsonDepth = 64;  // summary.json nests 5 deep

inline nlohmann::json parse_bounded_json(const std::string& text, const std::string& source) {
  try {
    return nlohmann::json::parse(text, [&](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
      if (depth > kMaxJsonDepth) {
        throw std::invalid_argument(source + ": nested deeper than " + std::to_string(kMaxJsonDepth) +
                                    " levels (not a file fitscope wrote)");
      }
      return true;
    });
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(source + ": not valid JSON (" + e.what() + ")");
  }
}

}  // namespace fitscope::detail
