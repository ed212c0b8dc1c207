#include "fitscope/summary/trace_writer.hpp"

#include "fitscope/io/atomic_file.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace fitscope {

TraceWriter::TraceWriter(std::string path, TraceOptions options)
    : path_(std::move(path)), options_(options) {
  if (options_.keep_first < 0 || options_.sample_every < 1) {
    throw std::invalid_argument("trace options need keep_first >= 0 and sample_every >= 1");
  }
}

void TraceWriter::on_step(const StepRecord& record) {
  const int64_t index = seen_++;
  if (index < options_.keep_first || (index - options_.keep_first) % options_.sample_every == 0) {
    records_.push_back(record);
  }
}

void TraceWriter::on_validation(int64_t epoch, int64_t start_ns, int64_t dur_ns) {
  validations_.push_back({epoch, start_ns, dur_ns});
}

void TraceWriter::on_thread_spans(const std::vector<ThreadSpan>& spans) {
  thread_spans_.insert(thread_spans_.end(), spans.begin(), spans.end());
}

void TraceWriter::on_loader_changes(const std::vector<LoaderChange>& changes) {
  loader_changes_.insert(loader_changes_.end(), changes.begin(), changes.end());
}

void TraceWriter::on_callback_spans(const std::vector<CallbackSpan>& spans) {
  spans_.insert(spans_.end(), spans.begin(), spans.end());
}

void TraceWriter::finish() {
  using nlohmann::json;
  json events = json::array();
  std::vector<int64_t> ranks;
  int64_t origin = std::numeric_limits<int64_t>::max();
  for (const auto& r : records_) {
    if (std::find(ranks.begin(), ranks.end(), r.rank) == ranks.end()) ranks.push_back(r.rank);
    origin = std::min(origin, r.start_ns);
  }
  for (const auto& span : spans_) origin = std::min(origin, span.start_ns);
  for (const auto& v : validations_) origin = std::min(origin, v.start_ns);
  if (options_.more_thread_spans) {
    const std::vector<ThreadSpan> more = options_.more_thread_spans();
    thread_spans_.insert(thread_spans_.end(), more.begin(), more.end());
  }
  for (const auto& span : thread_spans_) origin = std::min(origin, span.start_ns);
  for (const auto& c : loader_changes_) origin = std::min(origin, c.at_ns);
  const int64_t own_rank = ranks.empty() ? 0 : ranks.front();
  for (int64_t rank : ranks) {
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", rank}, {"tid", 1},
                      {"args", {{"name", "rank " + std::to_string(rank)}}}});
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", rank}, {"tid", 1},
                      {"args", {{"name", "training"}}}});
  }
  if (!spans_.empty()) {
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", own_rank}, {"tid", 2},
                      {"args", {{"name", "callbacks (async)"}}}});
  }
  for (const auto& span : spans_) {
    events.push_back({{"name", span.name}, {"cat", "callback"}, {"ph", "X"},
                      {"ts", (span.start_ns - origin) / 1000.0}, {"dur", span.dur_ns / 1000.0},
                      {"pid", own_rank}, {"tid", 2}});
  }
  std::map<std::string, int64_t> tracks;  // thread name -> tid, from 3 on in name order
  for (const auto& span : thread_spans_) tracks.emplace(span.thread, 0);
  int64_t tid = 3;
  for (auto& [thread, id] : tracks) {
    id = tid++;
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", own_rank}, {"tid", id}, {"args", {{"name", thread}}}});
  }
  for (const auto& span : thread_spans_) {
    events.push_back({{"name", span.name}, {"cat", "thread"}, {"ph", "X"}, {"ts", (span.start_ns - origin) / 1000.0},
                      {"dur", span.dur_ns / 1000.0}, {"pid", own_rank}, {"tid", tracks.at(span.thread)}});
  }
  for (const auto& c : loader_changes_) {
    events.push_back({{"name", "loader"}, {"cat", "loader"}, {"ph", "C"}, {"ts", (c.at_ns - origin) / 1000.0},
                      {"pid", own_rank}, {"args", {{"workers", c.workers}, {"prefetch", c.prefetch}}}});
  }
  for (const auto& v : validations_) {
    events.push_back({{"name", "validation"}, {"cat", "validation"}, {"ph", "X"}, {"ts", (v.start_ns - origin) / 1000.0},
                      {"dur", v.dur_ns / 1000.0}, {"pid", own_rank}, {"tid", 1}, {"args", {{"epoch", v.epoch}}}});
  }
  for (const auto& r : records_) {
    const json args = {{"epoch", r.epoch}, {"batch", r.batch}};
    events.push_back({{"name", "step"}, {"cat", "step"}, {"ph", "X"}, {"ts", (r.start_ns - origin) / 1000.0},
                      {"dur", r.step_ns / 1000.0}, {"pid", r.rank}, {"tid", 1}, {"args", args}});
    int64_t offset = r.start_ns - origin;
    for (Phase p : all_phases()) {
      const int64_t dur = r.phase(p);
      if (dur == 0) continue;  // a phase that did not happen (h2d and comm on one CPU process)
      events.push_back({{"name", std::string(phase_name(p))}, {"cat", "phase"}, {"ph", "X"},
                        {"ts", offset / 1000.0}, {"dur", dur / 1000.0}, {"pid", r.rank}, {"tid", 1},
                        {"args", args}});
      offset += dur;
    }
  }
  const json trace = {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
  write_file_atomically(path_, trace.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace fitscope
