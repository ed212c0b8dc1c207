// The sweep's page (report.html of `fitscope sweep`): throughput and step time against batch size,
// and the rows, from sweep.json.
#include <nlohmann/json.hpp>

#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "fitscope/summary/sweep.hpp"
#include "report/page.hpp"
#include "report/svg.hpp"

namespace fitscope::report {
namespace fs = std::filesystem;

std::string sweep_page(const fs::path& path, const std::string& directory) {
  const json s = read_json(path);
  if (!s.is_object() || !s.contains("rows") || !s.at("rows").is_array()) {
    throw std::invalid_argument(path.string() + ": expected an object with \"rows\"");
  }
  std::vector<double> batch, speed, low, high, p50;
  std::ostringstream rows;
  for (const json& r : s.at("rows")) {
    batch.push_back(number(r, "batch_size"));
    speed.push_back(number(r, "samples_per_s"));
    low.push_back(number(r, "samples_per_s_low", speed.back()));  // a one-window sweep: no range
    high.push_back(number(r, "samples_per_s_high", speed.back()));
    p50.push_back(number(r, "step_ms_p50"));
    const bool wide = r.contains("wide") && r.at("wide").is_boolean() && r.at("wide").get<bool>();
    rows << "<tr><td>" << svg::escape(field(r, "batch_size")) << "</td><td>" << fixed(speed.back(), 0) << "</td><td>"
         << fixed(low.back(), 0) << "&ndash;" << fixed(high.back(), 0) << (wide ? " <b>wide</b>" : "") << "</td><td>"
         << fixed(number(r, "step_ms_p50")) << "</td><td>" << fixed(number(r, "step_ms_p99")) << "</td><td>"
         << percent(number(r, "data_wait_share")) << "</td><td>" << svg::escape(field(r, "threads")) << "</td><td>"
         << svg::escape(field(r, "verdict")) << "</td></tr>";
  }
  std::ostringstream body;
  body << "<h1>Throughput against batch size: " << svg::escape(field(s, "model")) << "</h1><p class=\"note\">"
       << svg::escape(directory) << "</p>";
  const double knee = number(s, "knee_batch_size", -1);
  const json fit = s.value("fit", json());
  body << "<div class=\"verdict\">";
  if (s.contains("knee_batch_size") && s.at("knee_batch_size").is_number_integer()) {
    const json k = s.value("knee", json());
    Knee described;
    described.batch_size = s.at("knee_batch_size").get<int64_t>();
    described.resolved = !k.is_object() || !k.contains("resolved") || !k.at("resolved").is_boolean() ||
                         k.at("resolved").get<bool>();
    described.lowest = static_cast<int64_t>(number(k, "lowest", static_cast<double>(described.batch_size)));
    described.highest = static_cast<int64_t>(number(k, "highest", static_cast<double>(described.batch_size)));
    body << "<b>" << with_unbroken_flags(describe_knee(described)) << "</b>.";
  } else {
    body << "<b>Knee: " << svg::escape(field(s, "knee_batch_size")) << "</b>";
  }
  const json method = s.value("method", json());
  if (method.is_object()) {
    body << "<br>Each batch size was measured in " << svg::escape(field(method, "windows"))
         << " windows of at least " << svg::escape(field(method, "window_seconds")) << " s and "
         << svg::escape(field(method, "window_steps"))
         << " steps, the batch sizes taking turns; samples/s is the windows' median, the band their range.";
  }
  if (fit.is_object()) {
    body << "<br>Each step costs about " << fixed(number(fit, "fixed_ms")) << " ms fixed plus "
         << fixed(number(fit, "per_sample_ms"), 4) << " ms per example (least squares over the medians, both costs &ge; 0).";
  }
  body << "</div>";
  svg::ChartOptions o;
  o.title = "Samples per second against batch size";
  o.x_label = "batch size (examples, log2 scale)";
  o.x_log2 = true;
  o.y_label = "samples/s";
  if (knee > 0) o.markers.push_back({knee, "knee"});
  body << "<h2>Throughput</h2>" << svg::line_chart({{"samples/s (median of the windows)", batch, speed, false, false, low, high}}, o);
  std::vector<svg::Series> step_series = {{"step p50 (measured)", batch, p50, false, false, {}, {}}};
  if (fit.is_object()) {
    std::vector<double> model;
    for (double b : batch) model.push_back(number(fit, "fixed_ms") + number(fit, "per_sample_ms") * b);
    step_series.push_back({"fixed + per-example fit", batch, model, false, false, {}, {}});
  }
  o.title = "Step time against batch size";
  o.y_label = "step time (ms)";
  body << "<h2>Step time</h2>" << svg::line_chart(step_series, o)
       << "<table><tr><th>batch size</th><th>samples/s</th><th>windows (low&ndash;high)</th><th>p50 ms</th><th>p99 ms</th><th>data wait</th>"
          "<th>threads</th><th>verdict</th></tr>"
       << rows.str() << "</table>";
  return page("fitscope sweep: " + field(s, "model"), body.str());
}

}  // namespace fitscope::report
