#include "flag_values.hpp"

#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>

#include "fitscope/data/loading/loader.hpp"

namespace fitscope::cli {

/// A validator for whole numbers in [low, high]; its description, the help's N.
CLI::Validator integer_in(int64_t low, int64_t high) {
  return CLI::Validator(
      [=](std::string& v) -> std::string {
        const std::string expected = "expected an integer in [" + std::to_string(low) + ", " + std::to_string(high) + "], got '" + v + "'";
        try {
          std::size_t used = 0;
          const long long n = std::stoll(v, &used);
          if (used == v.size()) return n >= low && n <= high ? "" : expected;
        } catch (const std::out_of_range&) {
          return expected;
        } catch (const std::exception&) {
        }
        return expected + " (not a number)";
      },
      "N");
}

/// `text` as a finite number followed by one of `units` (a suffix and its scale; "" for none), times the
/// unit's scale; nothing when it is not such a number.
std::optional<double> scaled_number(const std::string& text, const std::map<std::string, double>& units) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  const auto unit = units.find(text.substr(used));
  if (unit == units.end() || !std::isfinite(value)) return std::nullopt;
  return value * unit->second;
}

std::optional<double> finite_number(const std::string& text) { return scaled_number(text, {{"", 1}}); }

/// A validator for finite numbers with a lower bound, inclusive or not, and at most `max`, naming what
/// is expected ("inf", "nan" and values that overflow a duration are refused); the help's X.
CLI::Validator number_above(double bound, bool inclusive, const std::string& expected, double max) {
  return CLI::Validator(
      [=](std::string& v) -> std::string {
        const auto x = finite_number(v);
        if (x && (inclusive ? *x >= bound : *x > bound) && *x <= max) return {};
        return "expected " + expected + ", got '" + v + "'";
      },
      "X");
}

/// A validator accepting what `parse` accepts, with its error message when it throws.
CLI::Validator parsed_by(std::function<void(const std::string&)> parse, const std::string& metavar) {
  return CLI::Validator(
      [parse = std::move(parse)](std::string& v) -> std::string {
        try {
          parse(v);
          return {};
        } catch (const std::exception& e) {
          return e.what();
        }
      },
      metavar);
}

/// "90", "90s", "10m", "2h" in seconds; throws std::invalid_argument saying what is expected.
double parse_duration_s(const std::string& text) {
  const auto seconds = scaled_number(text, {{"", 1}, {"s", 1}, {"m", 60}, {"h", 3600}});
  if (!seconds || *seconds <= 0 || *seconds >= 1e9) {
    throw std::invalid_argument("expected a duration > 0 such as 90, 90s, 10m or 2h, got '" + text + "'");
  }
  return *seconds;
}

/// "512M", "2G", "1048576": bytes (K, M, G, T powers of 1024), at least 1.
int64_t parse_bytes(const std::string& text) {
  const auto bytes = scaled_number(text, {{"", 1}, {"K", 0x1p10}, {"M", 0x1p20}, {"G", 0x1p30}, {"T", 0x1p40}});
  if (!bytes || *bytes < 1 || *bytes > 9e18) {
    throw std::invalid_argument("expected a size in bytes such as 1048576, 512M or 2G, got '" + text + "'");
  }
  return static_cast<int64_t>(*bytes);
}

/// "auto" (`auto_value`) or a `what` in [low, high], for the "auto|N" flags.
int64_t auto_or_count(const std::string& v, int64_t low, int64_t high, int64_t auto_value, const std::string& what) {
  if (v == "auto") return auto_value;
  if (!v.empty() && v.size() < 10 && v.find_first_not_of("0123456789") == std::string::npos && std::stoll(v) >= low &&
      std::stoll(v) <= high) {
    return std::stoll(v);
  }
  throw std::invalid_argument("expected auto or " + what + " in [" + std::to_string(low) + ", " + std::to_string(high) +
                              "], got '" + v + "'");
}

/// "auto" (0 in ThreadOptions) or a thread count in [1, 1024].
int parse_threads(const std::string& v) { return static_cast<int>(auto_or_count(v, 1, 1024, 0, "a thread count")); }
int64_t parse_workers(const std::string& v) { return auto_or_count(v, 0, 256, LoaderOptions::kAuto, "a worker count"); }
int64_t parse_prefetch(const std::string& v) { return auto_or_count(v, 1, 4096, LoaderOptions::kAuto, "a batch count"); }

/// "auto" (0), "off" (-1) or a number of steps between probes (TrainerOptions::layer_probe_every).
int64_t parse_layer_probe(const std::string& v) {
  if (v == "off") return -1;
  try {
    return auto_or_count(v, 1, 1'000'000, 0, "a number of steps");
  } catch (const std::invalid_argument&) {
    throw std::invalid_argument("expected auto, off or a number of steps in [1, 1000000], got '" + v + "'");
  }
}

/// "epoch" (0), "batch" (1) or a number of batches >= 1, for the "epoch|N" flags.
int64_t parse_every(const std::string& v, bool batch_word) {
  if (v == "epoch") return 0;
  if (batch_word && v == "batch") return 1;
  try {
    std::size_t used = 0;
    const long long n = std::stoll(v, &used);
    if (n >= 1 && used == v.size()) return n;
  } catch (const std::exception&) {
  }
  throw std::invalid_argument(std::string("expected epoch, ") + (batch_word ? "batch, " : "") +
                              "or a number of batches >= 1, got '" + v + "'");
}

std::pair<int64_t, int64_t> parse_node_count(const std::string& v) {
  const std::size_t colon = v.find(':');
  auto whole = [](const std::string& text) -> int64_t {
    try {
      std::size_t used = 0;
      const long long n = std::stoll(text, &used);
      if (used == text.size() && n >= 1 && n <= 65536) return n;
    } catch (const std::exception&) {
    }
    return -1;
  };
  const int64_t low = colon == std::string::npos ? 0 : whole(v.substr(0, colon));
  const int64_t high = whole(colon == std::string::npos ? v : v.substr(colon + 1));
  if (high < 1 || low < 0 || low > high || (colon != std::string::npos && high < 2)) {
    throw std::invalid_argument("expected a number of nodes N in [1, 65536], or MIN:MAX with 1 <= MIN <= MAX and MAX >= 2, got '" +
                                v + "'");
  }
  return {low, high};
}

CLI::Option* add_size_flag(CLI::App* command, const std::string& flag, int64_t& height, int64_t& width, int64_t smallest,
                           const std::string& help) {
  return command
      ->add_option_function<std::vector<int64_t>>(flag, [&height, &width](const std::vector<int64_t>& size) {
        height = size.at(0);
        width = size.size() > 1 ? size.at(1) : size.at(0);
      }, help)
      ->delimiter(',')->expected(1, 2)->check(integer_in(smallest, 16384));
}

}  // namespace fitscope::cli
