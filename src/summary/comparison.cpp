#include "fitscope/summary/comparison.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <functional>
#include <map>
#include <optional>
#include <tuple>
#include <sstream>
#include <stdexcept>

#include "fitscope/summary/detail/percent.hpp"

namespace fitscope {

namespace {

std::string ms(double v, bool sign = false) {
  char text[48];
  std::snprintf(text, sizeof text, sign ? "%+.3f" : "%.3f", v);
  return text;
}

std::string signed_percent(double share) { return (share >= 0 ? "+" : "") + detail::format_percent(share, 1); }

// One part's figures in one run: its mean over the measured steps and its stretches' means.
struct PartSummary {
  double mean = 0;
  std::vector<double> segment_means;
};

PartSummary summary_of(const SegmentedSeries& s) { return {s.mean(), s.segment_means()}; }

Difference welch(const PartSummary& a, const PartSummary& b, double confidence) {
  return welch_difference(a.mean, a.segment_means, b.mean, b.segment_means, confidence);
}

}  // namespace

std::string Comparison::direction() const {
  if (!step.significant) return "no significant change";
  return step.change > 0 ? "slower" : "faster";
}

namespace {

// The part of `parts` that changed the most in the direction of `sign` (+1 grew, -1 shrank), among those
// whose change is significant: a rank's part is one of its phases against the other ranks', so a rank
// that changed that way made the others wait for it in `comm` (or stopped doing so) and is named before
// any phase of the chief's; "" when none changed that way.
std::string largest_change(const std::vector<PartChange>& parts, int sign) {
  const auto along = [&](const PartChange& p) { return p.difference.significant && p.difference.change * sign > 0; };
  const PartChange* best = nullptr;
  for (const char* kind : {"rank", "phase"}) {
    for (const PartChange& p : parts) {
      if (p.kind == kind && along(p) && (best == nullptr || std::fabs(p.difference.change) > std::fabs(best->difference.change))) best = &p;
    }
    if (best != nullptr) return best->part;
  }
  return "";
}

}  // namespace

std::string Comparison::attributed_to() const { return step.significant ? largest_change(parts, step.change > 0 ? 1 : -1) : ""; }

std::string Comparison::largest_increase() const { return largest_change(parts, 1); }

std::string Comparison::method() const {
  const std::string ranks = " A rank's part is a phase of its step less the other ranks' mean of it in the same stretch (comm "
                            "aside), so that load slowing every rank alike cancels. Parts under " +
                            detail::format_percent(min_part_share, 0) + " of A's step in every run are not judged.";
  if (!repeats_of_b.empty()) {
    return "A is " + std::to_string(runs_of_a()) + " runs and B " + std::to_string(runs_of_b()) + " runs of their settings; a part's "
           "change is the difference of the means of their runs' means, its interval Welch's t over the runs' means (each run one "
           "value: the runs' own spread, measured on both sides); runs of A and B made in turn share the machine's drift." + ranks;
  }
  if (!repeats_of_a.empty()) {
    return "A is " + std::to_string(runs_of_a()) + " runs of the same settings; a part's change is B's mean less the mean of A's runs' "
           "means, its interval the prediction interval of one more run of A's settings (t with " + std::to_string(runs_of_a() - 1) +
           " degrees of freedom x the standard deviation of A's runs' means x sqrt(1 + 1/" + std::to_string(runs_of_a()) +
           ")): a change is called one when B's mean lies beyond where a run of A's settings lands, so each part is judged "
           "against its own run-to-run spread, measured." + ranks;
  }
  return "each run's measured steps (after warm-up: A " + std::to_string(a.measured_steps) + ", B " +
         std::to_string(b.measured_steps) + ") in " + std::to_string(segments) +
         " consecutive stretches; a part's change is the difference of the runs' means, its interval Welch's t over "
         "the stretches' means (batch means: step times are skewed and autocorrelated, the stretches' means nearly normal "
         "and independent, and they carry the run's drift). A change is called one when its interval lies beyond the "
         "noise floor, +-" + ms(noise_floor_ms) + " ms (ComparisonOptions::noise_floor of A's step: two runs of the same "
         "settings differ by more than either run's own steps show; repeat A to measure that spread instead)." + ranks;
}

std::string Comparison::noise_text() const {
  if (!repeats_of_b.empty()) return "the spread of A's " + std::to_string(runs_of_a()) + " and B's " + std::to_string(runs_of_b()) + " runs";
  if (!repeats_of_a.empty()) return "the spread of A's " + std::to_string(runs_of_a()) + " runs";
  return "the noise floor of +-" + ms(noise_floor_ms) + " ms";
}

std::vector<const CallbackChange*> Comparison::changed_callbacks() const {
  constexpr double kShownMs = 0.005;
  constexpr std::size_t kShown = 8;
  std::vector<const CallbackChange*> out;
  for (const CallbackChange& h : callbacks) {  // the largest change first
    if (std::fabs(h.b_ms_per_step - h.a_ms_per_step) < kShownMs || out.size() == kShown) break;
    out.push_back(&h);
  }
  return out;
}

std::vector<std::pair<std::string, const ComparedRun*>> Comparison::loaded_runs() const {
  std::vector<std::pair<std::string, const ComparedRun*>> out;
  const auto add = [&](const char* side, const ComparedRun& r) {
    if (!r.machine.empty()) out.emplace_back(side, &r);
  };
  add("A", a);
  for (const ComparedRun& r : repeats_of_a) add("A", r);
  add("B", b);
  for (const ComparedRun& r : repeats_of_b) add("B", r);
  return out;
}

double Comparison::change_fraction() const { return step.a > 0 ? step.change / step.a : 0.0; }

std::pair<double, double> Comparison::change_fraction_interval() const {
  return step.a > 0 ? std::make_pair(step.low / step.a, step.high / step.a) : std::make_pair(0.0, 0.0);
}

namespace {

nlohmann::json difference_json(const Difference& d) {
  const auto finite = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
  return {{"a_ms", d.a}, {"b_ms", d.b}, {"change_ms", d.change}, {"low_ms", finite(d.low)}, {"high_ms", finite(d.high)},
          {"significant", d.significant}};
}

nlohmann::json run_json(const ComparedRun& r) {
  return {{"directory", r.directory}, {"model", r.model}, {"data", r.data}, {"measured_steps", r.measured_steps},
          {"step_ms_p50", r.step_p50_ms}, {"samples_per_s", r.samples_per_s}, {"verdict", r.verdict}, {"machine", r.machine}};
}

}  // namespace

std::string Comparison::to_json() const {
  nlohmann::json j;
  j["a"] = run_json(a);
  j["b"] = run_json(b);
  j["repeats_of_a"] = nlohmann::json::array();
  for (const ComparedRun& r : repeats_of_a) j["repeats_of_a"].push_back(run_json(r));
  j["repeats_of_b"] = nlohmann::json::array();
  for (const ComparedRun& r : repeats_of_b) j["repeats_of_b"].push_back(run_json(r));
  const char* name = !repeats_of_b.empty()   ? "repeats of A and B, Welch's t over the runs"
                     : !repeats_of_a.empty() ? "repeats of A, prediction interval"
                                             : "batch means, Welch's t";
  j["method"] = {{"name", name}, {"runs_of_a", runs_of_a()}, {"runs_of_b", runs_of_b()}, {"segments", segments}, {"confidence", confidence},
                 {"part_confidence", part_confidence}, {"part_family", part_family}, {"noise_floor_ms", noise_floor_ms}};
  j["step"] = difference_json(step);
  j["step"]["change_fraction"] = change_fraction();
  j["direction"] = direction();
  j["attributed_to"] = attributed_to();
  j["largest_increase"] = largest_increase();
  j["parts"] = nlohmann::json::array();
  for (const PartChange& p : parts) {
    nlohmann::json part = difference_json(p.difference);
    part["part"] = p.part;
    part["kind"] = p.kind;
    part["share_of_change"] = p.share_of_change;
    j["parts"].push_back(part);
  }
  j["callbacks"] = nlohmann::json::array();
  for (const CallbackChange& c : callbacks) {
    j["callbacks"].push_back({{"name", c.name}, {"hook", c.hook}, {"a_ms_per_step", c.a_ms_per_step}, {"b_ms_per_step", c.b_ms_per_step}});
  }
  j["settings"] = nlohmann::json::array();
  for (const SettingChange& s : settings) {
    j["settings"].push_back({{"name", s.name}, {"a", s.a}, {"b", s.b}, {"source", s.source}});
  }
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

namespace {

using Phases = std::vector<std::pair<std::string, SegmentedSeries>>;

const SegmentedSeries* phase_of(const Phases& phases, const std::string& name) {
  for (const auto& [phase, series] : phases) {
    if (phase == name) return &series;
  }
  return nullptr;
}

// rank `rank`'s phase `name` less the other ranks' mean of it, stretch by stretch (each rank has a row
// for every step, so the ranks' stretches line up; where their counts differ, less the others' means);
// nullopt for a run of one rank, or without that rank or phase
std::optional<PartSummary> rank_part(const RunSeries& r, int64_t rank, const std::string& name) {
  if (r.ranks.size() < 2) return std::nullopt;
  const auto own = std::find_if(r.ranks.begin(), r.ranks.end(), [&](const RunSeries::Rank& k) { return k.rank == rank; });
  if (own == r.ranks.end() || phase_of(own->phases, name) == nullptr) return std::nullopt;
  PartSummary v = summary_of(*phase_of(own->phases, name));
  const double others = static_cast<double>(r.ranks.size() - 1);
  std::vector<double> others_segments(v.segment_means.size(), 0.0);
  double others_mean = 0;
  bool aligned = true;
  for (const RunSeries::Rank& k : r.ranks) {
    if (k.rank == rank) continue;
    const SegmentedSeries* series = phase_of(k.phases, name);
    if (series == nullptr) return std::nullopt;
    others_mean += series->mean() / others;
    const std::vector<double> segments = series->segment_means();
    aligned = aligned && segments.size() == others_segments.size();
    for (std::size_t i = 0; aligned && i < segments.size(); ++i) others_segments[i] += segments[i] / others;
  }
  v.mean -= others_mean;
  for (std::size_t i = 0; i < v.segment_means.size(); ++i) v.segment_means[i] -= aligned ? others_segments[i] : others_mean;
  return v;
}

}  // namespace

Comparison compare(const RunSeries& a, const RunSeries& b, const ComparisonOptions& options) {
  return compare(std::vector<RunSeries>{a}, std::vector<RunSeries>{b}, options);
}

Comparison compare(const std::vector<RunSeries>& a, const std::vector<RunSeries>& b, const ComparisonOptions& options) {
  if (a.empty() || b.empty()) throw std::invalid_argument("compare: no run of A or of B (expected one or more of each)");
  if (!(options.confidence > 0 && options.confidence < 1)) {
    throw std::invalid_argument("ComparisonOptions::confidence " + std::to_string(options.confidence) + " (expected between 0 and 1)");
  }
  if (!(options.noise_floor >= 0 && options.noise_floor < 1)) {
    throw std::invalid_argument("ComparisonOptions::noise_floor " + std::to_string(options.noise_floor) + " (expected 0 to 1)");
  }
  if (!(options.min_part_share >= 0 && options.min_part_share < 1)) {
    throw std::invalid_argument("ComparisonOptions::min_part_share " + std::to_string(options.min_part_share) + " (expected 0 to 1)");
  }
  Comparison c;
  c.a = a[0].run;
  for (std::size_t i = 1; i < a.size(); ++i) c.repeats_of_a.push_back(a[i].run);
  c.b = b[0].run;
  for (std::size_t i = 1; i < b.size(); ++i) c.repeats_of_b.push_back(b[i].run);
  c.confidence = options.confidence;
  c.min_part_share = options.min_part_share;
  const bool repeated = c.repeated();
  // one part judged: one run against one (batch means) or runs against runs (their spread)
  const auto judge = [&](const std::vector<PartSummary>& in_a, const std::vector<PartSummary>& in_b, double confidence) {
    if (!repeated) return welch(in_a[0], in_b[0], confidence);
    const auto means = [](const std::vector<PartSummary>& runs) {
      std::vector<double> out;
      for (const PartSummary& v : runs) out.push_back(v.mean);
      return out;
    };
    return compare_run_means(means(in_a), means(in_b), confidence);
  };
  std::vector<PartSummary> steps[2];
  c.segments = std::numeric_limits<int>::max();
  for (int side = 0; side < 2; ++side) {
    for (const RunSeries& r : side == 0 ? a : b) {
      steps[side].push_back(summary_of(r.step));
      c.segments = std::min(c.segments, static_cast<int>(steps[side].back().segment_means.size()));
    }
  }
  c.step = judge(steps[0], steps[1], options.confidence);
  c.noise_floor_ms = repeated ? 0.0 : options.noise_floor * c.step.a;
  // a change within the machine's run-to-run noise is not called one, whatever its interval
  const auto beyond_noise = [&](Difference& d) { d.significant = d.low > c.noise_floor_ms || d.high < -c.noise_floor_ms; };
  beyond_noise(c.step);

  // the parts every run has, that are large enough in one of them to move the step
  std::vector<std::tuple<PartChange, std::vector<PartSummary>, std::vector<PartSummary>>> compared;
  const auto consider = [&](PartChange part, const std::function<std::optional<PartSummary>(const RunSeries&)>& of) {
    std::vector<PartSummary> in[2];
    double most = 0;
    for (int side = 0; side < 2; ++side) {
      for (const RunSeries& r : side == 0 ? a : b) {
        std::optional<PartSummary> v = of(r);
        if (!v) return;
        most = std::max(most, std::fabs(v->mean));
        in[side].push_back(std::move(*v));
      }
    }
    if (most >= options.min_part_share * c.step.a) compared.emplace_back(std::move(part), std::move(in[0]), std::move(in[1]));
  };
  for (const auto& [name, first] : a[0].phases) {
    consider(PartChange{name, "phase", {}, 0}, [&, n = name](const RunSeries& r) -> std::optional<PartSummary> {
      const SegmentedSeries* s = phase_of(r.phases, n);
      return s ? std::optional<PartSummary>(summary_of(*s)) : std::nullopt;
    });
  }
  for (const RunSeries::Rank& rank : a[0].ranks) {
    for (const auto& [name, first] : rank.phases) {
      if (name == "comm") continue;  // where the ranks wait for one another: the others' delay, not this rank's
      consider(PartChange{"rank " + std::to_string(rank.rank) + " " + name, "rank", {}, 0},
               [&, k = rank.rank, n = name](const RunSeries& r) { return rank_part(r, k, n); });
    }
  }
  // Bonferroni over the comparisons made: with two ranks, rank 0's part of a phase (its phase less rank
  // 1's) is minus rank 1's, one comparison seen from either side, so the pair counts once
  const auto rank_parts = std::count_if(compared.begin(), compared.end(), [](const auto& e) { return std::get<0>(e).kind == "rank"; });
  c.part_family = std::max(1, static_cast<int>(compared.size()) - static_cast<int>(a[0].ranks.size() == 2 ? rank_parts / 2 : 0));
  c.part_confidence = 1 - (1 - options.confidence) / static_cast<double>(c.part_family);
  for (auto& [part, in_a, in_b] : compared) {
    part.difference = judge(in_a, in_b, c.part_confidence);
    beyond_noise(part.difference);
    if (part.kind == "phase" && c.step.change != 0) part.share_of_change = part.difference.change / c.step.change;
    c.parts.push_back(part);
  }
  std::stable_sort(c.parts.begin(), c.parts.end(), [](const PartChange& x, const PartChange& y) {
    if (x.difference.significant != y.difference.significant) return x.difference.significant;
    return std::fabs(x.difference.change) > std::fabs(y.difference.change);
  });

  std::map<std::pair<std::string, std::string>, CallbackChange> hooks;
  for (int side = 0; side < 2; ++side) {  // a side's cost: the mean over its runs (0 in a run without the hook)
    const std::vector<RunSeries>& runs = side == 0 ? a : b;
    for (const RunSeries& r : runs) {
      for (const CallbackCost& h : r.callbacks) {
        CallbackChange& into = hooks[{h.name, h.hook}];
        into.name = h.name;
        into.hook = h.hook;
        (side == 0 ? into.a_ms_per_step : into.b_ms_per_step) += h.ms_per_step / static_cast<double>(runs.size());
      }
    }
  }
  for (const auto& [key, h] : hooks) c.callbacks.push_back(h);
  std::stable_sort(c.callbacks.begin(), c.callbacks.end(), [](const CallbackChange& x, const CallbackChange& y) {
    return std::fabs(x.b_ms_per_step - x.a_ms_per_step) > std::fabs(y.b_ms_per_step - y.a_ms_per_step);
  });

  std::map<std::string, std::pair<const RunSetting*, const RunSetting*>> settings;
  for (const RunSetting& s : a[0].settings) settings[s.name].first = &s;
  for (const RunSetting& s : b[0].settings) settings[s.name].second = &s;
  for (const auto& [name, pair] : settings) {
    const std::string in_a = pair.first ? pair.first->value : "-", in_b = pair.second ? pair.second->value : "-";
    if (in_a != in_b) c.settings.push_back({name, in_a, in_b, (pair.first ? pair.first : pair.second)->source});
  }
  return c;
}

std::string format_comparison(const Comparison& c) {
  std::ostringstream out;
  const auto describe = [](const char* label, const ComparedRun& r) {
    return std::string(label) + " " + r.directory + " (" + r.model + " on " + r.data + ", " + std::to_string(r.measured_steps) +
           " measured steps, step p50 " + ms(r.step_p50_ms) + " ms)";
  };
  out << describe("A:", c.a) << "\n";
  for (const ComparedRun& r : c.repeats_of_a) out << describe("   ", r) << "\n";
  out << describe("B:", c.b) << "\n";
  for (const ComparedRun& r : c.repeats_of_b) out << describe("   ", r) << "\n";
  for (const auto& [side, r] : c.loaded_runs()) {
    out << "Met other load: " << r->directory << " (" << side << "): " << r->machine << ".\n";
  }
  out << "\n";
  const std::string level = detail::format_percent(c.confidence, 0);
  out << "Step time: A " << ms(c.step.a) << " ms, B " << ms(c.step.b) << " ms a step (means): ";
  if (!std::isfinite(c.step.low)) {
    out << "too few measured steps to judge a change (" << c.segments << " stretches).\n";
  } else {
    const auto [low, high] = c.change_fraction_interval();
    if (c.step.significant) {
      out << "B is " << c.direction() << " by " << ms(std::fabs(c.step.change)) << " ms (" << signed_percent(c.change_fraction())
          << ", " << level << " interval " << signed_percent(low) << " to " << signed_percent(high) << ").\n";
    } else {
      out << "no significant change (" << signed_percent(c.change_fraction()) << ", " << level << " interval "
          << signed_percent(low) << " to " << signed_percent(high) << ", "
          << (!c.repeated()
                  ? "the noise floor +-" + detail::format_percent(c.step.a > 0 ? c.noise_floor_ms / c.step.a : 0.0, 1)
                  : "from " + c.noise_text())
          << ").\n";
    }
  }
  const std::string cause = c.attributed_to();
  if (!cause.empty()) {
    for (const PartChange& p : c.parts) {
      if (p.part != cause) continue;
      out << "Attributed to " << cause << ": " << ms(p.difference.change, true) << " ms a step";
      if (p.kind == "rank") {
        out << " beyond the other ranks' (they waited for it in comm).\n";
      } else {
        out << " (" << detail::format_percent(p.share_of_change, 0) << " of the change).\n";
      }
    }
  } else if (c.step.significant) {
    out << "No single part changed significantly: the change is spread over the step.\n";
  }
  const std::string grew = c.largest_increase();
  if (!grew.empty() && grew != cause) {
    for (const PartChange& p : c.parts) {
      if (p.part == grew) out << "Slower in B all the same: " << grew << " " << ms(p.difference.change, true) << " ms a step.\n";
    }
  }
  out << "\n";
  char row[160];
  std::snprintf(row, sizeof row, "%-18s %9s %9s %9s  %-21s %s\n", "part", "A ms", "B ms", "change", "interval (joint)", "");
  out << row;
  for (const PartChange& p : c.parts) {
    const Difference& d = p.difference;
    const std::string interval = std::isfinite(d.low) ? ms(d.low, true) + " .. " + ms(d.high, true) : "(too few steps)";
    std::snprintf(row, sizeof row, "%-18s %9s %9s %9s  %-21s %s\n", p.part.c_str(), ms(d.a).c_str(), ms(d.b).c_str(),
                  ms(d.change, true).c_str(), interval.c_str(), d.significant ? "*" : "");
    out << row;
  }
  out << "* changed: beyond " << (c.repeated() ? c.noise_text() : std::string("the noise floor")) << " ("
      << detail::format_percent(c.part_confidence, 2) << " each, " << level
      << " jointly over " << c.part_family
      << (c.part_family == static_cast<int>(c.parts.size()) ? " parts" : " comparisons: two ranks' mirror-image parts once") << ")\n";
  const std::vector<const CallbackChange*> changed = c.changed_callbacks();
  if (!changed.empty()) out << "\nCallbacks that changed, ms per step (no interval: their calls are not kept one by one):\n";
  for (const CallbackChange* hook : changed) {
    const CallbackChange& h = *hook;
    const std::string name = h.name + "." + h.hook;
    if (name.size() > 42) out << "  " << name << "\n";  // a long name on a line of its own, the figures below it
    std::snprintf(row, sizeof row, "  %-42s %9s %9s %9s\n", name.size() > 42 ? "" : name.c_str(), ms(h.a_ms_per_step).c_str(),
                  ms(h.b_ms_per_step).c_str(), ms(h.b_ms_per_step - h.a_ms_per_step, true).c_str());
    out << row;
  }
  out << "\n";
  if (c.settings.empty()) {
    out << "Settings: the same in both runs.\n";
  } else {
    out << "Settings that differ:\n";
    for (const SettingChange& s : c.settings) out << "  " << s.name << ": " << s.a << " -> " << s.b << " (" << s.source << ")\n";
  }
  out << "\nVerdict of A: " << c.a.verdict << "\nVerdict of B: " << c.b.verdict << "\n";
  out << "\nMethod: " << c.method() << "\n";
  return out.str();
}

}  // namespace fitscope
