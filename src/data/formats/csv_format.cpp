#include "fitscope/data/formats/csv_format.hpp"

#include <charconv>
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string_view>

namespace fitscope {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split_fields(std::string_view line) {
  std::vector<std::string_view> fields;
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = line.find(',', start);
    fields.push_back(trim(line.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start)));
    if (comma == std::string_view::npos) return fields;
    start = comma + 1;
  }
}

std::optional<double> to_number(std::string_view field) {
  if (!field.empty() && field.front() == '+') field.remove_prefix(1);
  double value = 0;
  const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), value);
  if (field.empty() || ec != std::errc() || end != field.data() + field.size()) return std::nullopt;
  return value;
}

std::string unquote(std::string_view s) {
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
  return std::string(s);
}

std::string shown(std::string_view field) {
  constexpr std::size_t kMax = 40;
  return "'" + std::string(field.substr(0, kMax)) + (field.size() > kMax ? "...'" : "'");
}

}  // namespace

CsvTable parse_csv(const std::string& text, const std::string& name, const CsvOptions& options) {
  CsvTable table;
  int64_t columns = -1;
  bool first = true;
  std::size_t pos = 0;
  int64_t line_number = 0;
  const auto fail = [&](const std::string& what) {
    throw std::invalid_argument(name + ": line " + std::to_string(line_number) + ": " + what);
  };
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string_view line = trim(std::string_view(text).substr(pos, end - pos));
    pos = end + 1;
    ++line_number;
    if (line.empty()) continue;
    const std::vector<std::string_view> fields = split_fields(line);
    if (first) {
      first = false;
      columns = static_cast<int64_t>(fields.size());
      bool header = false;
      for (auto f : fields) header = header || !to_number(f);
      if (header) {
        for (auto f : fields) table.columns.push_back(unquote(f));
      }
      // the label column, by name or index
      const std::string& chosen = options.label_column;
      const bool named = !chosen.empty() && chosen != "none" && !to_number(chosen);
      const std::string label_name = named ? chosen : "label";
      const bool unlabeled = chosen == "none" ||
                             (options.labels_optional && header && (chosen.empty() || named) &&
                              std::find(table.columns.begin(), table.columns.end(), label_name) == table.columns.end());
      if (unlabeled) {
        table.label_column = -1;
      } else if (chosen.empty()) {
        table.label_column = 0;
        for (std::size_t i = 0; i < table.columns.size(); ++i) {
          if (table.columns[i] == "label") table.label_column = static_cast<int64_t>(i);
        }
      } else if (auto index = to_number(chosen); index && *index == std::floor(*index)) {
        table.label_column = static_cast<int64_t>(*index);
        if (table.label_column < 0 || table.label_column >= columns) {
          throw std::invalid_argument(name + ": label column " + chosen + " out of range (the file has " +
                                      std::to_string(columns) + " columns, 0 to " + std::to_string(columns - 1) + ")");
        }
      } else {
        table.label_column = -1;
        for (std::size_t i = 0; i < table.columns.size(); ++i) {
          if (table.columns[i] == chosen) table.label_column = static_cast<int64_t>(i);
        }
        if (table.label_column < 0) {
          throw std::invalid_argument(name + ": no column named '" + chosen + "' " +
                                      (table.columns.empty() ? "(the file has no header line)" : "in the header line"));
        }
      }
      if (unlabeled) {
        table.features = columns;
      } else {
        if (columns < 2) fail("expected a label column and at least one feature column, found " + std::to_string(columns) + " column");
        table.features = columns - 1;
      }
      if (header) continue;
    }
    if (static_cast<int64_t>(fields.size()) != columns) {
      fail("found " + std::to_string(fields.size()) + " fields, expected " + std::to_string(columns) +
           " like the first line (ragged row)");
    }
    for (int64_t c = 0; c < columns; ++c) {
      const std::string_view field = fields[static_cast<std::size_t>(c)];
      const std::optional<double> value = to_number(field);
      if (!value || !std::isfinite(*value)) {
        fail("column " + std::to_string(c) + ": " + shown(field) + " is not a finite number");
      }
      if (c == table.label_column) {
        if (*value < 0 || *value != std::floor(*value) || *value > 2147483647.0) {
          fail("column " + std::to_string(c) + ": label " + shown(field) + " is not a class index (expected an integer >= 0)");
        }
        if (*value >= static_cast<double>(options.max_classes)) {
          fail("column " + std::to_string(c) + ": label " + shown(field) + " is not below the limit of " +
               std::to_string(options.max_classes) + " classes (expected a class index; RunSpec::num_classes N to allow more)");
        }
        table.labels.push_back(static_cast<int64_t>(*value));
      } else {
        if (std::fabs(*value) > std::numeric_limits<float>::max()) {
          fail("column " + std::to_string(c) + ": " + shown(field) + " is beyond the range of a float (+-3.4e38)");
        }
        table.values.push_back(static_cast<float>(*value));
      }
    }
    table.lines.push_back(line_number);
    ++table.rows;
  }
  if (table.rows == 0) throw std::invalid_argument(name + ": no data rows (expected comma-separated numbers)");
  return table;
}

}  // namespace fitscope
