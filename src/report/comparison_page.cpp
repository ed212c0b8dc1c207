#include "fitscope/report/comparison_page.hpp"

#include <cmath>
#include <sstream>

#include "fitscope/io/atomic_file.hpp"
#include "fitscope/summary/detail/percent.hpp"
#include "report/page.hpp"
#include "report/svg.hpp"

namespace fitscope {

namespace {

using report::fixed;
using svg::escape;

std::string signed_ms(double v) { return std::isfinite(v) ? (v >= 0 ? "+" : "") + fixed(v) : std::string("unbounded"); }

std::string headline(const Comparison& c) {
  std::ostringstream out;
  const auto [low, high] = c.change_fraction_interval();
  const std::string level = detail::format_percent(c.confidence, 0);
  if (!std::isfinite(c.step.low)) return "Too few measured steps to judge a change.";
  out << (c.step.significant ? "B is " + c.direction() : std::string("No significant change")) << ": "
      << fixed(c.step.a) << " ms to " << fixed(c.step.b) << " ms a step (" << (c.change_fraction() >= 0 ? "+" : "")
      << report::percent(c.change_fraction()) << ", " << level << " interval " << (low >= 0 ? "+" : "") << report::percent(low)
      << " to " << (high >= 0 ? "+" : "") << report::percent(high) << ")";
  if (!c.step.significant) out << ", within " << c.noise_text();
  const std::string cause = c.attributed_to();
  if (!cause.empty()) out << ", attributed to " << cause;
  out << ".";
  return out.str();
}

}  // namespace

std::string comparison_html(const Comparison& c) {
  std::ostringstream body;
  body << "<h1>fitscope compare</h1><p class=\"note\">A: " << escape(c.a.directory);
  for (const ComparedRun& r : c.repeats_of_a) body << ", " << escape(r.directory);
  body << " &middot; B: " << escape(c.b.directory);
  for (const ComparedRun& r : c.repeats_of_b) body << ", " << escape(r.directory);
  body << "</p><div class=\"verdict headline\"><b>" << escape(headline(c)) << "</b></div>";
  for (const auto& [side, r] : c.loaded_runs()) {
    body << "<p class=\"note\">Met other load: " << escape(r->directory) << " (" << side << "): " << escape(r->machine) << ".</p>";
  }
  std::vector<svg::Interval> rows{{"step", c.step.change, c.step.low, c.step.high, c.step.significant}};
  for (const PartChange& p : c.parts) {
    rows.push_back({p.part, p.difference.change, p.difference.low, p.difference.high, p.difference.significant});
  }
  svg::ChartOptions chart;
  chart.title = "Change from A to B, ms per step, with its interval";
  chart.x_label = "change of the mean (ms per step; right of 0: B slower)";
  body << "<h2>Where the step changed</h2>" << svg::interval_chart(rows, chart);
  body << "<table><tr><th>part</th><th>A ms</th><th>B ms</th><th>change ms</th><th>interval</th><th>changed</th></tr>";
  const auto row = [&](const std::string& name, const Difference& d) {
    body << "<tr" << (d.significant ? " class=\"slow\"" : "") << "><td>" << escape(name) << "</td><td>" << fixed(d.a) << "</td><td>"
         << fixed(d.b) << "</td><td>" << signed_ms(d.change) << "</td><td>" << signed_ms(d.low) << " to " << signed_ms(d.high)
         << "</td><td>" << (d.significant ? "yes" : "no") << "</td></tr>";
  };
  row("step", c.step);
  for (const PartChange& p : c.parts) row(p.part, p.difference);
  body << "</table><p class=\"note\">A change is called one beyond " << escape(c.noise_text())
       << " (the method below). The step's interval at "
       << detail::format_percent(c.confidence, 0) << "; each part's at "
       << detail::format_percent(c.part_confidence, 2) << ", " << detail::format_percent(c.confidence, 0) << " jointly over the " << c.parts.size()
       << " parts.</p>";
  body << "<h2>Callbacks that changed</h2>";
  if (c.changed_callbacks().empty()) body << "<p>None changed by 0.005 ms a step or more.</p>";
  else body << "<table><tr><th>callback</th><th>A ms per step</th><th>B ms per step</th><th>change</th></tr>";
  for (const CallbackChange* changed : c.changed_callbacks()) {
    const CallbackChange& h = *changed;
    body << "<tr><td>" << escape(h.name + "." + h.hook) << "</td><td>" << fixed(h.a_ms_per_step) << "</td><td>" << fixed(h.b_ms_per_step)
         << "</td><td>" << signed_ms(h.b_ms_per_step - h.a_ms_per_step) << "</td></tr>";
  }
  if (!c.changed_callbacks().empty()) body << "</table>";
  body << "<h2>Settings that differ</h2>";
  if (c.settings.empty()) {
    body << "<p>None: the same in both runs.</p>";
  } else {
    body << "<table><tr><th>setting</th><th>A</th><th>B</th><th>read from</th></tr>";
    for (const SettingChange& s : c.settings) {
      body << "<tr><td>" << escape(s.name) << "</td><td>" << escape(s.a) << "</td><td>" << escape(s.b) << "</td><td>"
           << escape(s.source) << "</td></tr>";
    }
    body << "</table>";
  }
  body << "<h2>Verdicts</h2><table><tr><th>run</th><th>verdict</th></tr><tr><td>A</td><td style=\"text-align:left\">"
       << report::with_unbroken_flags(c.a.verdict) << "</td></tr><tr><td>B</td><td style=\"text-align:left\">"
       << report::with_unbroken_flags(c.b.verdict) << "</td></tr></table>";
  body << "<h2>Method</h2><p class=\"note\">" << report::with_unbroken_flags(c.method()) << "</p>";
  return report::page("fitscope compare", body.str());
}

void write_comparison_html(const Comparison& c, const std::string& out) { write_output_file(out, comparison_html(c)); }

}  // namespace fitscope
