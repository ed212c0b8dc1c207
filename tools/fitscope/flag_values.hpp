#pragma once
/// The words of flag values: whole numbers in a range, numbers above a bound, durations (90s, 10m),
/// sizes in bytes (512M), "auto" or a count, "epoch" or a number of batches; each parser throws
/// std::invalid_argument saying what is expected, and each validator shows it in the help's words.

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>

namespace fitscope::cli {

/// A check for whole numbers in [low, high] ("expected an integer in [1, 1000000], got 'abc' (not a
/// number)"); the help calls the value N.
CLI::Validator integer_in(int64_t low, int64_t high);
/// `text` as a finite number followed by one of `units` (a suffix and its scale; "" for none), times
/// the unit's scale; nothing when it is not such a number.
std::optional<double> scaled_number(const std::string& text, const std::map<std::string, double>& units);
std::optional<double> finite_number(const std::string& text);
/// A check for finite numbers above `bound` (or at it, when `inclusive`) and at most `max`, saying
/// "expected <expected>, got '<value>'"; the help calls the value X.
CLI::Validator number_above(double bound, bool inclusive, const std::string& expected, double max = 1e300);
/// A check accepting what `parse` accepts, with its error message when it throws.
CLI::Validator parsed_by(std::function<void(const std::string&)> parse, const std::string& metavar);

double parse_duration_s(const std::string& text);
int64_t parse_bytes(const std::string& text);
int64_t auto_or_count(const std::string& v, int64_t low, int64_t high, int64_t auto_value, const std::string& what);
int parse_threads(const std::string& v);
int64_t parse_layer_probe(const std::string& v);
int64_t parse_workers(const std::string& v);
int64_t parse_prefetch(const std::string& v);
int64_t parse_every(const std::string& v, bool batch_word);
/// --nnodes: "N", or "MIN:MAX" for an elastic job (1 <= MIN <= MAX <= 65536, MAX > 1): (MIN, MAX), MIN
/// 0 for "N".
std::pair<int64_t, int64_t> parse_node_count(const std::string& v);

/// Adds a HEIGHT,WIDTH flag (one number for a square), each side in [smallest, 16384].
CLI::Option* add_size_flag(CLI::App* command, const std::string& flag, int64_t& height, int64_t& width, int64_t smallest,
                           const std::string& help);

/// A string flag whose value `parse` turns into a field.
template <typename Parse, typename Set>
CLI::Option* add_parsed(CLI::App* command, const std::string& flag, Parse parse, const std::string& metavar, Set set,
                        const std::string& help) {
  return command
      ->add_option_function<std::string>(flag, [parse, set](const std::string& v) { set(parse(v)); }, help)
      ->check(parsed_by([parse](const std::string& v) { parse(v); }, metavar));
}

}  // namespace fitscope::cli
