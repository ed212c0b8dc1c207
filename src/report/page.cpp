#include "report/page.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "fitscope/io/atomic_file.hpp"
#include "report/svg.hpp"
#include "fitscope/io/detail/bounded_json.hpp"
#include "fitscope/io/detail/csv_rows.hpp"

namespace fitscope::report {
namespace fs = std::filesystem;

std::vector<double> Table::values(int c) const {
  std::vector<double> out;
  for (const auto& r : rows) out.push_back(r[static_cast<std::size_t>(c)]);
  return out;
}

std::string read_text(const fs::path& path) {
  return read_whole_file(path.string(), "a file of a run directory", std::uintmax_t{1} << 30);
}

Table read_table(const fs::path& path) {
  Table t;
  detail::for_each_csv_row(path, [&](const std::vector<std::string>& columns) { t.columns = columns; },
                   [&](const std::vector<double>& row) { t.rows.push_back(row); });
  return t;
}

json read_json(const fs::path& path) { return detail::parse_bounded_json(read_text(path), path.string()); }

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string percent(double share) { return svg::format_percent(share); }

std::string count_of(int64_t n, const std::string& noun) { return std::to_string(n) + " " + noun + (n == 1 ? "" : "s"); }

std::string field(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || j.at(key).is_null()) return "-";
  const json& v = j.at(key);
  if (v.is_number_float()) return svg::format_number(v.get<double>());
  if (v.is_string()) return v.get<std::string>();
  return v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

double number(const json& j, const char* key, double fallback) {
  return j.is_object() && j.contains(key) && j.at(key).is_number() ? j.at(key).get<double>() : fallback;
}

namespace {

const char* kStyle = R"(<style>
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px auto;max-width:980px;color:#1a1a1a;line-height:1.4}
h1{font-size:1.5em;margin-bottom:4px} h2{font-size:1.15em;margin-top:28px;border-bottom:1px solid #ccc;padding-bottom:3px}
table{border-collapse:collapse;margin:8px 0;font-size:0.92em} td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f2f2f2} td:first-child,th:first-child{text-align:left}
.verdict{border:2px solid #1f4e99;background:#eef3fb;padding:10px 14px;margin:12px 0;border-radius:4px}
.verdict b{font-size:1.1em} .headline{font-size:1.1em;margin:10px 0} .headline span{margin-right:14px} tr.slow td{background:#fdecea;font-weight:bold} .note{color:#555;font-size:0.9em}
svg.chart{display:block;margin:8px 0;background:#fff;font-family:inherit} .flag{white-space:nowrap}
</style>)";

}  // namespace

std::string with_unbroken_flags(const std::string& text) {
  std::string out;
  for (std::size_t at = 0; at < text.size();) {
    const bool flag = text.compare(at, 2, "--") == 0 && (at == 0 || !std::isalnum(static_cast<unsigned char>(text[at - 1])));
    if (!flag) {
      out += svg::escape(std::string_view(text).substr(at, 1));
      ++at;
      continue;
    }
    std::size_t end = at + 2;
    while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '-')) ++end;
    out += "<span class=\"flag\">" + svg::escape(std::string_view(text).substr(at, end - at)) + "</span>";
    at = end;
  }
  return out;
}

std::string page(const std::string& title, const std::string& body) {
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + svg::escape(title) +
         "</title>" + kStyle + "</head><body>\n" + body + "</body></html>\n";
}

}  // namespace fitscope::report
