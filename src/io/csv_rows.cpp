#include "fitscope/io/detail/csv_rows.hpp"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace fitscope::detail {
namespace fs = std::filesystem;

namespace {

std::vector<std::string> split_fields(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream in(line);
  for (std::string field; std::getline(in, field, ',');) out.push_back(field);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

}  // namespace

void for_each_csv_row(const fs::path& path, const std::function<void(const std::vector<std::string>&)>& header,
                      const std::function<void(const std::vector<double>&)>& row) {
  constexpr std::size_t kMaxLine = std::size_t{1} << 20;  // far beyond any row a run writes
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) throw std::invalid_argument(path.string() + ": not a regular file (expected a CSV a run wrote)");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument(path.string() + ": cannot be read");
  std::string line;
  int64_t number = 0;
  const auto next_line = [&] {
    line.clear();
    for (int c; (c = in.get()) != EOF && c != '\n';) {
      if (line.size() == kMaxLine) {
        throw std::invalid_argument(path.string() + ": line " + std::to_string(number + 1) + ": longer than " +
                                    std::to_string(kMaxLine) + " bytes (expected a CSV a run wrote)");
      }
      line.push_back(static_cast<char>(c));
    }
    if (!line.empty() && line.back() == '\r') line.pop_back();
    ++number;
    return !line.empty() || in;
  };
  if (!next_line() || line.empty()) throw std::invalid_argument(path.string() + ": line 1: expected a header line");
  const std::vector<std::string> columns = split_fields(line);
  header(columns);
  std::vector<double> values;
  while (next_line()) {
    if (line.empty()) continue;
    const auto fields = split_fields(line);
    if (fields.size() != columns.size()) {
      throw std::invalid_argument(path.string() + ": line " + std::to_string(number) + ": " + std::to_string(fields.size()) +
                                  " fields, expected " + std::to_string(columns.size()) + " like the header");
    }
    values.clear();
    for (const auto& f : fields) {
      char* end = nullptr;
      const double v = std::strtod(f.c_str(), &end);
      values.push_back(end == f.c_str() || *end != '\0' ? std::nan("") : v);
    }
    row(values);
  }
}

}  // namespace fitscope::detail
