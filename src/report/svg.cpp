#include "report/svg.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "fitscope/summary/detail/percent.hpp"

namespace fitscope::svg {
namespace {

constexpr int kLeft = 64, kRight = 16, kTop = 36, kBottom = 72;

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

/// Significant-digit formatting without trailing zeros.
std::string compact(double v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

std::string header(const ChartOptions& o, const std::string& role) {
  return "<svg class=\"chart " + role + "\" width=\"" + std::to_string(o.width) +
         "\" height=\"" + std::to_string(o.height) + "\" viewBox=\"0 0 " + std::to_string(o.width) + " " +
         std::to_string(o.height) + "\" role=\"img\" aria-label=\"" + escape(o.title) + "\">" +
         "<text class=\"chart-title\" x=\"" + std::to_string(o.width / 2) +
         "\" y=\"20\" text-anchor=\"middle\" font-weight=\"bold\">" + escape(o.title) + "</text>";
}

// A value above the axis' top `edge` at pixel `x`: a triangle at the edge, `what` and "(above the axis)" on hover.
std::string above(double x, double edge, const std::string& color, const std::string& what) {
  return "<path class=\"above\" d=\"M" + num(x - 4) + "," + num(edge + 6) + " L" + num(x + 4) + "," + num(edge + 6) + " L" + num(x) +
         "," + num(edge) + " Z\" fill=\"" + color + "\"><title>" + escape(what) + " (above the axis)</title></path>";
}

// A vertical dashed line at pixel `x` with the marker's label inside the plot, `at` on hover.
std::string marker(const Marker& m, double x, const ChartOptions& o, const std::string& at) {
  const bool right_half = x > (kLeft + o.width - kRight) / 2.0;  // the label goes inside the plot
  std::ostringstream out;
  out << "<g class=\"marker\"><line x1=\"" << num(x) << "\" x2=\"" << num(x) << "\" y1=\"" << kTop << "\" y2=\""
      << o.height - kBottom << "\" stroke=\"#888\" stroke-dasharray=\"3 3\"/><text x=\"" << num(x + (right_half ? -3 : 3))
      << "\" y=\"" << kTop + 10 << "\" font-size=\"11\" fill=\"#444\"" << (right_half ? " text-anchor=\"end\">" : ">")
      << escape(m.label) << "</text><title>" << escape(m.label) << " at " << escape(at) << "</title></g>";
  return out.str();
}

std::string no_data(const ChartOptions& o, const std::string& role) {
  return header(o, role) + "<text x=\"" + std::to_string(o.width / 2) + "\" y=\"" + std::to_string(o.height / 2) +
         "\" text-anchor=\"middle\" fill=\"#555\">no data</text></svg>";
}

}  // namespace

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

Scale::Scale(double domain_lo, double domain_hi, double range_lo, double range_hi)
    : d0_(domain_lo), d1_(domain_hi), r0_(range_lo), r1_(range_hi) {}

double Scale::operator()(double value) const {
  if (d1_ == d0_) return (r0_ + r1_) / 2;
  return r0_ + (value - d0_) / (d1_ - d0_) * (r1_ - r0_);
}

std::vector<double> ticks(double lo, double hi, int target) {
  if (!std::isfinite(lo) || !std::isfinite(hi) || target < 1) return {};
  if (lo > hi) std::swap(lo, hi);
  if (lo == hi) return {lo};
  const double raw = (hi - lo) / target;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  double step = power;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * power;
    if (step >= raw) break;
  }
  std::vector<double> out;
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) {
    out.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
  }
  return out;
}

std::string format_percent(double share) { return detail::format_percent(share, 1); }

std::string format_number(double value) {
  const double a = std::abs(value);
  if (a >= 1e6) return compact(value / 1e6, 4) + "M";
  if (a >= 1e4) return compact(value / 1e3, 4) + "k";
  return compact(value, 4);
}

Style style(std::size_t index) {
  // hue and lightness both change from one series to the next; dashes tell the rest apart
  static const Style palette[] = {{"#1f4e99", ""},         {"#f0a030", "6 3"},     {"#2e8b57", "2 2"},
                                  {"#b22222", "8 3 2 3"},  {"#a9a3f5", "1 3"},     {"#5c4400", "10 4"},
                                  {"#17becf", "4 2 1 2"},  {"#d9d9d9", "12 2"},    {"#7a1f5c", "3 6"},
                                  {"#9acd32", "6 2 2 2"},  {"#404040", "2 6"},     {"#ffd966", "9 2"}};
  return palette[index % (sizeof palette / sizeof palette[0])];
}

std::string line_chart(const std::vector<Series>& input, const ChartOptions& input_options) {
  // a log2 x axis: the same chart drawn over log2(x), its ticks and hover text back in x
  std::vector<Series> series = input;
  ChartOptions o = input_options;
  if (o.x_log2) {
    const auto log2_of = [](double x) { return x > 0 ? std::log2(x) : std::numeric_limits<double>::quiet_NaN(); };
    for (Series& s : series) std::transform(s.x.begin(), s.x.end(), s.x.begin(), log2_of);
    for (Marker& m : o.markers) m.x = log2_of(m.x);
    o.markers.erase(std::remove_if(o.markers.begin(), o.markers.end(), [](const Marker& m) { return !std::isfinite(m.x); }),
                    o.markers.end());
  }
  const auto x_text = [&](double x) { return format_number(o.x_log2 ? std::exp2(x) : x); };
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
  for (const Series& s : series) {
    for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
      x0 = std::min(x0, s.x[i]);
      x1 = std::max(x1, s.x[i]);
      y0 = std::min(y0, s.y[i]);
      y1 = std::max(y1, s.y[i]);
      if (i < s.band_hi.size()) y1 = std::max(y1, s.band_hi[i]);
      if (i < s.band_lo.size()) y0 = std::min(y0, s.band_lo[i]);
    }
  }
  if (!std::isfinite(x0)) return no_data(o, "line");
  for (const Marker& m : o.markers) {
    x0 = std::min(x0, m.x);
    x1 = std::max(x1, m.x);
  }
  if (o.y_from_zero) y0 = std::min(y0, 0.0);
  if (o.y_max && *o.y_max > y0 && *o.y_max < y1) y1 = *o.y_max;
  if (y0 == y1) {  // a flat series gets a range around its value (with ticks), not 0..1
    const double pad = y0 == 0 ? 1 : std::abs(y0) * 0.5;
    y0 = o.y_from_zero && y0 > 0 ? 0 : y0 - pad;
    y1 += pad;
  }
  if (x0 == x1) {  // a single point: centre it
    const double pad = o.x_integer ? 0.5 : 1;
    x0 -= pad;
    x1 += pad;
  }
  const std::vector<double> yt = ticks(y0, y1, 5);
  y1 = std::max(y1, yt.empty() ? y1 : yt.back());
  const Scale sx(x0, x1, kLeft, o.width - kRight);
  const Scale y_scale(y0, y1, o.height - kBottom, kTop);
  const auto sy = [&](double y) { return y_scale(std::min(y, y1)); };  // above the axis: at its edge
  std::ostringstream out;
  out << header(o, "line");
  // axes, grid and ticks
  out << "<g class=\"axis\" font-size=\"11\" fill=\"#333\">";
  for (double t : yt) {
    out << "<line x1=\"" << kLeft << "\" x2=\"" << o.width - kRight << "\" y1=\"" << num(sy(t)) << "\" y2=\""
        << num(sy(t)) << "\" stroke=\"#ddd\"/><text x=\"" << kLeft - 6 << "\" y=\"" << num(sy(t) + 4)
        << "\" text-anchor=\"end\">" << escape(format_number(t)) << "</text>";
  }
  std::vector<double> xt;
  if (o.x_log2) {
    for (double k = std::ceil(x0); k <= std::floor(x1); ++k) xt.push_back(k);
  } else if (o.x_integer) {
    const double step = std::max(1.0, std::ceil((std::floor(x1) - std::ceil(x0)) / 6));
    for (double k = std::ceil(x0); k <= std::floor(x1); k += step) xt.push_back(k);
  } else {
    xt = ticks(x0, x1, 6);
  }
  for (double t : xt) {
    out << "<text x=\"" << num(sx(t)) << "\" y=\"" << o.height - kBottom + 16 << "\" text-anchor=\"middle\">"
        << escape(x_text(t)) << "</text>";
  }
  out << "<line x1=\"" << kLeft << "\" x2=\"" << o.width - kRight << "\" y1=\"" << o.height - kBottom << "\" y2=\""
      << o.height - kBottom << "\" stroke=\"#333\"/><line x1=\"" << kLeft << "\" x2=\"" << kLeft << "\" y1=\"" << kTop
      << "\" y2=\"" << o.height - kBottom << "\" stroke=\"#333\"/>";
  out << "<text x=\"" << (kLeft + o.width - kRight) / 2 << "\" y=\"" << o.height - kBottom + 34
      << "\" text-anchor=\"middle\">" << escape(o.x_label) << "</text>";
  out << "<text transform=\"translate(14," << (kTop + o.height - kBottom) / 2
      << ") rotate(-90)\" text-anchor=\"middle\">" << escape(o.y_label) << "</text></g>";
  for (const Marker& m : o.markers) out << marker(m, sx(m.x), o, x_text(m.x));
  std::size_t index = 0;
  std::ostringstream legend;
  int legend_x = kLeft;
  for (const Series& s : series) {
    const Style st = style(index++);
    const std::size_t n = std::min(s.x.size(), s.y.size());
    out << "<g class=\"series\" data-name=\"" << escape(s.name) << "\"><title>" << escape(s.name) << "</title>";
    if (!s.band_lo.empty() && s.band_lo.size() == n && s.band_hi.size() == n && n > 0) {
      out << "<polygon fill=\"" << st.color << "\" fill-opacity=\"0.18\" stroke=\"none\" points=\"";
      for (std::size_t i = 0; i < n; ++i) out << num(sx(s.x[i])) << "," << num(sy(s.band_hi[i])) << " ";
      for (std::size_t i = n; i-- > 0;) out << num(sx(s.x[i])) << "," << num(sy(s.band_lo[i])) << " ";
      out << "\"/>";
    }
    if (s.points || n == 1) {
      for (std::size_t i = 0; i < n; ++i) {
        if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
        if (s.y[i] > y1) {  // beyond the axis: a triangle at its edge
          out << above(sx(s.x[i]), sy(y1), st.color, s.name + ": " + x_text(s.x[i]) + ", " + format_number(s.y[i]));
          continue;
        }
        out << "<circle cx=\"" << num(sx(s.x[i])) << "\" cy=\"" << num(sy(s.y[i])) << "\" r=\"" << (s.faint ? 1.5 : 3)
            << "\" fill=\"" << st.color << "\"" << (s.faint ? " fill-opacity=\"0.35\"" : "") << "><title>"
            << escape(s.name) << ": " << escape(x_text(s.x[i])) << ", " << escape(format_number(s.y[i]))
            << "</title></circle>";
      }
    } else if (n > 1) {
      out << "<polyline fill=\"none\" stroke=\"" << st.color << "\" stroke-width=\"" << (s.faint ? 1 : 2) << "\""
          << (s.faint ? " stroke-opacity=\"0.35\"" : "")
          << (st.dash.empty() ? "" : " stroke-dasharray=\"" + st.dash + "\"") << " points=\"";
      for (std::size_t i = 0; i < n; ++i) {
        if (std::isfinite(s.x[i]) && std::isfinite(s.y[i])) out << num(sx(s.x[i])) << "," << num(sy(s.y[i])) << " ";
      }
      out << "\"/>";
      if (!s.faint && n <= 60) {  // few points: each gets a dot with its numbers on hover
        for (std::size_t i = 0; i < n; ++i) {
          if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
          out << "<circle cx=\"" << num(sx(s.x[i])) << "\" cy=\"" << num(sy(s.y[i])) << "\" r=\"2.5\" fill=\""
              << st.color << "\"><title>" << escape(s.name) << ": " << escape(x_text(s.x[i])) << ", "
              << escape(format_number(s.y[i])) << "</title></circle>";
        }
      }
    }
    out << "</g>";
    legend << "<g class=\"legend-item\">";
    if (s.points || n == 1) {  // drawn as dots: the legend shows dots, not a (dashed) line
      for (int dot = 0; dot < 3; ++dot) {
        legend << "<circle class=\"key\" cx=\"" << legend_x + 3 + 8 * dot << "\" cy=\"" << o.height - 14 << "\" r=\"2.5\" fill=\""
               << st.color << "\"/>";
      }
    } else {
      legend << "<line x1=\"" << legend_x << "\" x2=\"" << legend_x + 22 << "\" y1=\"" << o.height - 14 << "\" y2=\""
             << o.height - 14 << "\" stroke=\"" << st.color << "\" stroke-width=\"3\""
             << (st.dash.empty() ? "" : " stroke-dasharray=\"" + st.dash + "\"") << "/>";
    }
    legend << "<text x=\"" << legend_x + 26 << "\" y=\"" << o.height - 10 << "\" font-size=\"12\">"
           << escape(s.name) << "</text></g>";
    legend_x += 40 + 7 * static_cast<int>(s.name.size());
  }
  out << "<g class=\"legend\">" << legend.str() << "</g></svg>";
  return out.str();
}

std::string stacked_bar(const std::vector<Part>& parts, const ChartOptions& o) {
  double total = 0;
  for (const Part& p : parts) total += std::max(0.0, p.value);
  if (parts.empty() || !(total > 0)) return no_data(o, "stacked");
  const Scale sx(0, total, kLeft, o.width - kRight);
  std::ostringstream out, legend;
  out << header(o, "stacked");
  double at = 0;
  int legend_x = kLeft, legend_y = 96;
  std::size_t index = 0;
  for (const Part& p : parts) {
    const Style st = style(index++);
    const double v = std::max(0.0, p.value);
    const std::string percent = format_percent(v / total);
    const std::string tip = p.tooltip.empty() ? p.name + ": " + percent : p.tooltip;
    if (v > 0) {
      out << "<rect class=\"part\" x=\"" << num(sx(at)) << "\" y=\"40\" width=\"" << num(sx(at + v) - sx(at))
          << "\" height=\"36\" fill=\"" << st.color << "\" stroke=\"#fff\"><title>" << escape(tip) << "</title></rect>";
    }
    at += v;
    if (legend_x > o.width - 160) {
      legend_x = kLeft;
      legend_y += 20;
    }
    legend << "<g class=\"legend-item\"><rect x=\"" << legend_x << "\" y=\"" << legend_y - 10
           << "\" width=\"12\" height=\"12\" fill=\"" << st.color << "\"/><text x=\"" << legend_x + 16 << "\" y=\""
           << legend_y << "\" font-size=\"12\">" << escape(p.name) << " " << escape(percent) << "</text><title>"
           << escape(tip) << "</title></g>";
    legend_x += 150;
  }
  out << "<g class=\"legend\">" << legend.str() << "</g></svg>";
  return out.str();
}

std::string stacked_columns(const std::vector<Series>& layers, const ChartOptions& o) {
  std::size_t n = 0;
  for (const Series& l : layers) n = std::max(n, std::min(l.x.size(), l.y.size()));
  if (layers.empty() || n == 0) return no_data(o, "columns");
  std::vector<double> top(n, 0.0);
  for (const Series& l : layers) {
    for (std::size_t i = 0; i < std::min(l.x.size(), l.y.size()); ++i) top[i] += std::max(0.0, l.y[i]);
  }
  const std::vector<double>& xs = layers.front().x;
  const double x0 = xs.front(), x1 = xs[std::min(xs.size(), n) - 1];
  double y1 = *std::max_element(top.begin(), top.end());
  if (o.y_max && *o.y_max > 0) y1 = std::min(y1, *o.y_max);  // taller columns end at the edge, marked
  if (!(y1 > 0)) y1 = 1;
  const std::vector<double> yt = ticks(0, y1, 5);
  y1 = std::max(y1, yt.empty() ? y1 : yt.back());
  const double width = static_cast<double>(o.width - kLeft - kRight) / static_cast<double>(n);
  const Scale sx(x0, x1 == x0 ? x0 + 1 : x1, kLeft + width / 2, o.width - kRight - width / 2);
  const Scale sy(0, y1, o.height - kBottom, kTop);
  std::ostringstream out, legend;
  out << header(o, "columns") << "<g class=\"axis\" font-size=\"11\" fill=\"#333\">";
  for (double t : yt) {
    out << "<line x1=\"" << kLeft << "\" x2=\"" << o.width - kRight << "\" y1=\"" << num(sy(t)) << "\" y2=\"" << num(sy(t))
        << "\" stroke=\"#ddd\"/><text x=\"" << kLeft - 6 << "\" y=\"" << num(sy(t) + 4) << "\" text-anchor=\"end\">"
        << escape(format_number(t)) << "</text>";
  }
  for (double t : ticks(x0, x1, 6)) {
    out << "<text x=\"" << num(sx(t)) << "\" y=\"" << o.height - kBottom + 16 << "\" text-anchor=\"middle\">"
        << escape(format_number(t)) << "</text>";
  }
  out << "<text x=\"" << (kLeft + o.width - kRight) / 2 << "\" y=\"" << o.height - kBottom + 34 << "\" text-anchor=\"middle\">"
      << escape(o.x_label) << "</text><text transform=\"translate(14," << (kTop + o.height - kBottom) / 2
      << ") rotate(-90)\" text-anchor=\"middle\">" << escape(o.y_label) << "</text></g>";
  std::vector<double> base(n, 0.0);
  int legend_x = kLeft;
  std::size_t index = 0;
  for (const Series& l : layers) {
    const Style st = style(index++);
    out << "<g class=\"layer\" data-name=\"" << escape(l.name) << "\">";
    for (std::size_t i = 0; i < std::min(l.x.size(), l.y.size()); ++i) {
      const double v = std::max(0.0, std::min(l.y[i], y1 - base[i]));  // the part below the axis' top
      if (v > 0) {
        out << "<rect x=\"" << num(sx(l.x[i]) - width / 2) << "\" y=\"" << num(sy(base[i] + v)) << "\" width=\""
            << num(std::max(width, 0.5)) << "\" height=\"" << num(sy(base[i]) - sy(base[i] + v)) << "\" fill=\"" << st.color
            << "\"><title>" << escape(l.name) << ": " << escape(format_number(l.x[i])) << ", "
            << escape(format_number(std::max(0.0, l.y[i]))) << "</title></rect>";
      }
      base[i] += std::max(0.0, l.y[i]);
    }
    out << "</g>";
    legend << "<g class=\"legend-item\"><rect class=\"key\" x=\"" << legend_x << "\" y=\"" << o.height - 24
           << "\" width=\"12\" height=\"12\" fill=\"" << st.color << "\"/><text x=\"" << legend_x + 16 << "\" y=\""
           << o.height - 14 << "\" font-size=\"12\">" << escape(l.name) << "</text></g>";
    legend_x += 28 + 7 * static_cast<int>(l.name.size());
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (top[i] <= y1) continue;  // a column above the axis: a triangle at its edge, its height on hover
    out << above(sx(xs[i]), sy(y1), "#333", format_number(xs[i]) + ": " + format_number(top[i]));
  }
  for (const Marker& m : o.markers) out << marker(m, sx(m.x), o, format_number(m.x));
  out << "<g class=\"legend\">" << legend.str() << "</g></svg>";
  return out.str();
}

std::string interval_chart(const std::vector<Interval>& rows, const ChartOptions& o) {
  if (rows.empty()) return no_data(o, "intervals");
  constexpr int kNames = 120, kRow = 24;
  double lo = 0, hi = 0;
  for (const Interval& r : rows) {
    for (double v : {r.value, r.low, r.high}) {
      if (std::isfinite(v)) {
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
    }
  }
  if (lo == hi) hi = lo + 1;
  const std::vector<double> xt = ticks(lo, hi, 6);
  if (!xt.empty()) {
    lo = std::min(lo, xt.front());
    hi = std::max(hi, xt.back());
  }
  const int height = kTop + kRow * static_cast<int>(rows.size()) + 48;
  const Scale sx(lo, hi, kLeft + kNames, o.width - kRight);
  ChartOptions sized = o;
  sized.height = height;
  std::ostringstream out;
  out << header(sized, "intervals") << "<g class=\"axis\" font-size=\"11\" fill=\"#333\">";
  const int bottom = kTop + kRow * static_cast<int>(rows.size());
  for (double t : xt) {
    out << "<line x1=\"" << num(sx(t)) << "\" x2=\"" << num(sx(t)) << "\" y1=\"" << kTop << "\" y2=\"" << bottom
        << "\" stroke=\"" << (t == 0 ? "#333" : "#ddd") << "\"/><text x=\"" << num(sx(t)) << "\" y=\"" << bottom + 16
        << "\" text-anchor=\"middle\">" << escape(format_number(t)) << "</text>";
  }
  out << "<text x=\"" << (kLeft + kNames + o.width - kRight) / 2 << "\" y=\"" << bottom + 36 << "\" text-anchor=\"middle\">"
      << escape(o.x_label) << "</text></g>";
  int y = kTop + kRow / 2;
  for (const Interval& r : rows) {
    const double x0 = std::isfinite(r.low) ? sx(r.low) : kLeft + kNames, x1 = std::isfinite(r.high) ? sx(r.high) : o.width - kRight;
    const std::string color = r.marked ? "#b2182b" : "#555";
    out << "<g class=\"interval\" data-name=\"" << escape(r.name) << "\"><text x=\"" << kLeft + kNames - 8 << "\" y=\"" << y + 4
        << "\" text-anchor=\"end\" font-size=\"12\"" << (r.marked ? " font-weight=\"bold\"" : "") << ">" << escape(r.name)
        << "</text><line x1=\"" << num(x0) << "\" x2=\"" << num(x1) << "\" y1=\"" << y << "\" y2=\"" << y << "\" stroke=\"" << color
        << "\" stroke-width=\"" << (r.marked ? 3 : 1.5) << "\"/><circle cx=\"" << num(sx(r.value)) << "\" cy=\"" << y
        << "\" r=\"4\" fill=\"" << color << "\"/><title>" << escape(r.name) << ": " << escape(format_number(r.value)) << " ("
        << escape(std::isfinite(r.low) ? format_number(r.low) : "unbounded") << " to "
        << escape(std::isfinite(r.high) ? format_number(r.high) : "unbounded") << ")</title></g>";
    y += kRow;
  }
  out << "</svg>";
  return out.str();
}

}  // namespace fitscope::svg
