#pragma once
/// A small SVG charting helper for the HTML report: linear scales, "nice" axis ticks, XML escaping,
/// and four chart kinds drawn as inline SVG strings (line/scatter charts, a horizontal stacked bar, a
/// band under a line, stacked columns). Charts carry their title in words, units on the axes, a <title> on every mark
/// (numbers on hover), and series told apart by dash pattern and lightness as well as hue, so they
/// survive grey-scale printing. Pure functions; thread-safe; no libtorch.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fitscope::svg {

/// `text` with & < > " ' escaped for XML text and attributes.
std::string escape(std::string_view text);

/// Maps [domain_lo, domain_hi] onto [range_lo, range_hi] linearly; a zero-width domain maps to the
/// middle of the range.
class Scale {
 public:
  Scale(double domain_lo, double domain_hi, double range_lo, double range_hi);
  double operator()(double value) const;

 private:
  double d0_, d1_, r0_, r1_;
};

/// About `target` round tick values (1, 2 or 5 times a power of ten apart) covering [lo, hi]; one tick
/// when lo == hi; none for non-finite input.
std::vector<double> ticks(double lo, double hi, int target = 5);

/// A tick label: no trailing zeros, at most 4 significant digits, "k"/"M" for thousands/millions.
std::string format_number(double value);
/// A share (0..1) as a percentage: one decimal, "9.96 %" and "10.0 %" never both ("10.0%"). The one
/// rounding rule of the report's tables, legends and tooltips.
std::string format_percent(double share);

/// The palette: distinguishable in colour and in grey-scale (lightness steps), with a dash pattern each.
struct Style {
  std::string color;
  std::string dash;  ///< SVG stroke-dasharray, "" for solid
};
Style style(std::size_t index);

struct Series {
  std::string name;
  std::vector<double> x, y;
  bool points = false;   ///< draw dots (with a hover title each) instead of a line
  bool faint = false;    ///< thin and light (raw data behind a summary line)
  std::vector<double> band_lo, band_hi;  ///< optional band around the line (same length as x)
};

/// A vertical marker at x (e.g. the end of warm-up, the knee).
struct Marker {
  double x;
  std::string label;
};

struct ChartOptions {
  std::string title;    ///< in words, e.g. "Step time over the run"
  std::string x_label;  ///< with unit, e.g. "step"
  std::string y_label;  ///< with unit, e.g. "ms"
  int width = 720;
  int height = 300;
  bool y_from_zero = true;
  bool x_log2 = false;  ///< x on a log2 scale, ticked at powers of two (batch sizes); x <= 0 is not drawn
  bool x_integer = false;  ///< x ticks at whole numbers only (epochs); a single point stays a point
  /// The y axis ends at the first tick from here (a step time's p99), so a few slow points do not flatten
  /// the rest; values above it are drawn at the edge, as triangles with their value on hover. Unset =
  /// the largest value.
  std::optional<double> y_max;
  std::vector<Marker> markers;
};

/// Lines (or dots) of every series on shared axes, with a legend; "no data" when every series is empty.
std::string line_chart(const std::vector<Series>& series, const ChartOptions& options);

/// One part of a whole (a phase's share of the step).
struct Part {
  std::string name;
  double value;          ///< >= 0; parts are drawn in proportion
  std::string tooltip;   ///< hover text; empty = name and percentage
};

/// A horizontal bar split into parts, with a legend naming each part and its percentage.
std::string stacked_bar(const std::vector<Part>& parts, const ChartOptions& options);

/// One column per x, split into the layers' values stacked bottom-up in layer order (TensorBoard
/// Profiler's step-time graph: each step's phases); each layer's x and y hold one value per column.
/// A hover title on every segment; a legend with each layer's colour.
std::string stacked_columns(const std::vector<Series>& layers, const ChartOptions& options);

/// One row of an interval chart: a value and its interval (a change and its confidence interval).
struct Interval {
  std::string name;
  double value = 0, low = 0, high = 0;
  bool marked = false;  ///< drawn bold (a significant change)
};

/// One row per interval: the value as a dot, the interval as a whisker, on a shared x axis with a line
/// at zero; the rows' names on the left. Unbounded ends are drawn to the edge.
std::string interval_chart(const std::vector<Interval>& rows, const ChartOptions& options);

}  // namespace fitscope::svg
