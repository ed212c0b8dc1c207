#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "report/svg.hpp"

using namespace fitscope::svg;

namespace {
int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}
}  // namespace

TEST(Svg, EscapesEveryMarkupCharacter) {
  EXPECT_EQ(escape("a<b & c>\"d\" 'e'"), "a&lt;b &amp; c&gt;&quot;d&quot; &#39;e&#39;");
}

TEST(Svg, ScaleMapsLinearlyAndCentresAZeroWidthDomain) {
  const Scale s(0, 10, 100, 200);
  EXPECT_DOUBLE_EQ(s(0), 100);
  EXPECT_DOUBLE_EQ(s(5), 150);
  EXPECT_DOUBLE_EQ(s(10), 200);
  const Scale flipped(0, 1, 300, 100);  // SVG's y axis grows downwards
  EXPECT_DOUBLE_EQ(flipped(1), 100);
  EXPECT_DOUBLE_EQ(Scale(3, 3, 0, 10)(3), 5);
}

TEST(Svg, TicksAreRoundAndCoverTheRange) {
  EXPECT_EQ(ticks(0, 10, 5), (std::vector<double>{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(ticks(0, 1, 4), (std::vector<double>{0, 0.5, 1}));
  EXPECT_EQ(ticks(13, 87, 4), (std::vector<double>{20, 40, 60, 80}));
  EXPECT_EQ(ticks(-1, 1, 2), (std::vector<double>{-1, 0, 1}));
  EXPECT_EQ(ticks(7, 7), (std::vector<double>{7}));
  EXPECT_TRUE(ticks(0, NAN).empty());
}

TEST(Svg, FormatsTickLabelsCompactly) {
  EXPECT_EQ(format_number(0.5), "0.5");
  EXPECT_EQ(format_number(2), "2");
  EXPECT_EQ(format_number(0.12345), "0.1235");
  EXPECT_EQ(format_number(25000), "25k");
  EXPECT_EQ(format_number(3500000), "3.5M");
}

TEST(Svg, AnEmptyChartSaysNoData) {
  ChartOptions o;
  o.title = "Step time";
  const std::string chart = line_chart({{"steps", {}, {}, false, false, {}, {}}}, o);
  EXPECT_NE(chart.find("no data"), std::string::npos);
  EXPECT_EQ(chart.rfind("<svg", 0), 0u);
  EXPECT_NE(stacked_bar({}, o).find("no data"), std::string::npos);
  EXPECT_NE(stacked_bar({{"zero", 0, ""}}, o).find("no data"), std::string::npos);
}

TEST(Svg, ASinglePointIsADotWithItsNumbersOnHover) {
  ChartOptions o;
  o.title = "One";
  const std::string chart = line_chart({{"loss", {3}, {0.25}, false, false, {}, {}}}, o);
  EXPECT_EQ(count(chart, "<circle cx"), 1);  // the data point (the legend's dots are class="key")
  EXPECT_NE(chart.find("<title>loss: 3, 0.25</title>"), std::string::npos);
  EXPECT_EQ(chart.find("nan"), std::string::npos);
}

TEST(Svg, NamesTitlesAndLabelsAreEscapedInTheChart) {
  ChartOptions o;
  o.title = "a <b> & \"c\"";
  o.x_label = "x<1>";
  o.y_label = "ms & more";
  o.markers = {{1, "warm-up <end>"}};
  const std::string chart = line_chart({{"val_<&>\"", {0, 1, 2}, {1, 2, 3}, false, false, {}, {}}}, o);
  EXPECT_EQ(chart.find("<b>"), std::string::npos);
  EXPECT_EQ(chart.find("val_<"), std::string::npos);
  EXPECT_NE(chart.find("a &lt;b&gt; &amp; &quot;c&quot;"), std::string::npos);
  EXPECT_NE(chart.find("val_&lt;&amp;&gt;&quot;"), std::string::npos);
  EXPECT_NE(chart.find("warm-up &lt;end&gt;"), std::string::npos);
  EXPECT_EQ(count(chart, "<svg"), 1);
  EXPECT_EQ(count(chart, "</svg>"), 1);
}

TEST(Svg, StackedBarPartsAreProportional) {
  ChartOptions o;
  o.title = "Shares";
  o.width = 64 + 16 + 400;  // 400 px of bar between the margins
  const std::string bar = stacked_bar({{"forward", 3, ""}, {"backward", 1, ""}}, o);
  EXPECT_NE(bar.find("width=\"300.00\""), std::string::npos) << bar;
  EXPECT_NE(bar.find("width=\"100.00\""), std::string::npos);
  EXPECT_NE(bar.find("forward 75.0%"), std::string::npos);
}

TEST(Svg, PercentagesHaveOneRoundingRule) {
  EXPECT_EQ(format_percent(0.0996), "10.0%");  // the legend said 9.96 % where the table said 10.0 %
  EXPECT_EQ(format_percent(0.25), "25.0%");
  EXPECT_EQ(format_percent(0), "0.0%");
  ChartOptions o;
  const std::string bar = stacked_bar({{"forward", 0.0996, ""}, {"other", 0.9004, ""}}, o);
  EXPECT_NE(bar.find("forward 10.0%"), std::string::npos) << bar;
}

TEST(Svg, SeriesDifferInDashAsWellAsColour) {
  EXPECT_NE(style(0).dash, style(1).dash);
  EXPECT_NE(style(0).color, style(1).color);
}

namespace {
/// The x-axis tick labels of a chart, in order (they are centred under the axis; y ticks are not).
std::vector<std::string> x_ticks(const std::string& svg) {
  std::vector<std::string> out;
  const std::string anchor = "text-anchor=\"middle\">";
  for (std::size_t at = svg.find(anchor); at != std::string::npos; at = svg.find(anchor, at + 1)) {
    const std::size_t from = at + anchor.size(), to = svg.find('<', from);
    const std::string label = svg.substr(from, to - from);
    if (!label.empty() && (std::isdigit(static_cast<unsigned char>(label[0])) || label[0] == '-')) out.push_back(label);
  }
  return out;
}
}  // namespace

TEST(Svg, BatchSizesGoOnALog2AxisTickedAtPowersOfTwo) {
  ChartOptions o;
  o.x_log2 = true;
  o.markers.push_back({64, "knee"});
  const std::string chart = line_chart({{"samples/s", {16, 32, 64, 128, 256}, {1, 2, 3, 4, 5}, false, false, {}, {}}}, o);
  EXPECT_EQ(x_ticks(chart), (std::vector<std::string>{"16", "32", "64", "128", "256"})) << chart;
  EXPECT_NE(chart.find("samples/s: 128, 4"), std::string::npos);  // hover text in batch sizes, not logs
  EXPECT_NE(chart.find("knee at 64"), std::string::npos);
  // a knee at the right end is labelled left of its line, inside the chart (it was cut to "kn")
  o.markers = {{256, "knee"}};
  const std::string at_end = line_chart({{"samples/s", {16, 256}, {1, 2}, false, false, {}, {}}}, o);
  EXPECT_NE(at_end.find("text-anchor=\"end\">knee</text>"), std::string::npos) << at_end;
  o.markers = {{16, "knee"}};
  const std::string at_start = line_chart({{"samples/s", {16, 256}, {1, 2}, false, false, {}, {}}}, o);
  EXPECT_NE(at_start.find("fill=\"#444\">knee</text>"), std::string::npos) << at_start;
}

TEST(Svg, EpochsAreWholeNumbersAndOneEpochIsAPoint) {
  ChartOptions o;
  o.x_integer = true;
  EXPECT_EQ(x_ticks(line_chart({{"loss", {1, 2, 3}, {3, 2, 1}, false, false, {}, {}}}, o)),
            (std::vector<std::string>{"1", "2", "3"}));
  const std::string one = line_chart({{"loss", {1}, {0.5}, true, false, {}, {}}}, o);
  EXPECT_EQ(x_ticks(one), (std::vector<std::string>{"1"})) << one;
  EXPECT_EQ(count(one, "<circle cx"), 1);
}

TEST(Svg, AFlatSeriesGetsARangeAroundItsValueWithATickAtIt) {
  ChartOptions o;
  o.y_from_zero = false;
  const std::string chart = line_chart({{"learning_rate", {1, 2, 3}, {0.001, 0.001, 0.001}, false, false, {}, {}}}, o);
  EXPECT_NE(chart.find("text-anchor=\"end\">0.001</text>"), std::string::npos) << chart;
  EXPECT_EQ(chart.find("text-anchor=\"end\">1</text>"), std::string::npos);  // not a 0..1 axis
}

TEST(Svg, ALegendShowsDotsForASeriesDrawnAsDots) {
  ChartOptions o;
  const std::string chart = line_chart({{"rolling p50", {1, 2, 3}, {1, 2, 3}, false, false, {}, {}},
                                        {"each step", {1, 2, 3}, {1, 3, 2}, true, true, {}, {}}},
                                       o);
  const std::string legend = chart.substr(chart.find("<g class=\"legend\">"));
  const auto each = legend.find("each step");
  ASSERT_NE(each, std::string::npos);
  const std::string item = legend.substr(legend.rfind("<g class=\"legend-item\">", each), each - legend.rfind("<g class=\"legend-item\">", each));
  EXPECT_EQ(count(item, "<circle"), 3) << item;
  EXPECT_EQ(count(item, "<line"), 0) << item;
}

TEST(Svg, StackedColumnsStackEachColumnsLayersBottomUp) {
  ChartOptions o;
  o.height = 36 + 72 + 100;  // 100 px of plot between the margins
  const std::string chart = stacked_columns({{"forward", {0, 1}, {1, 2}, false, false, {}, {}},
                                             {"backward", {0, 1}, {3, 2}, false, false, {}, {}}},
                                            o);
  EXPECT_EQ(count(chart, "<rect x"), 4) << chart;  // two layers of two columns (legend squares are not "rect x")
  EXPECT_NE(chart.find("<title>forward: 0, 1</title>"), std::string::npos);
  EXPECT_NE(chart.find("<title>backward: 1, 2</title>"), std::string::npos);
  // both columns reach 4 ms: the top of each is the top of the axis (y = 36)
  EXPECT_EQ(count(chart, "y=\"36.00\""), 2) << chart;
  EXPECT_NE(stacked_columns({}, o).find("no data"), std::string::npos);
}

TEST(Svg, AnAxisEndingAtYMaxDrawsTheLargerValuesAtItsEdge) {
  Series s{"steps", {0, 1, 2, 3}, {1, 1.2, 0.9, 188}, true, false, {}, {}};
  ChartOptions o;
  o.title = "t";
  const std::string whole = line_chart({s}, o);
  EXPECT_EQ(whole.find("class=\"above\""), std::string::npos);
  o.y_max = 1.2;
  const std::string clipped = line_chart({s}, o);
  EXPECT_NE(clipped.find("class=\"above\""), std::string::npos);
  EXPECT_NE(clipped.find("188 (above the axis)"), std::string::npos) << clipped;
  EXPECT_EQ(clipped.find(">150<"), std::string::npos);  // no tick near the outlier
}
