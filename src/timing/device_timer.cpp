#include "fitscope/timing/device_timer.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace fitscope {

bool runs_on_device(Phase phase) {
  switch (phase) {
    case Phase::h2d:
    case Phase::forward:
    case Phase::backward:
    case Phase::comm:
    case Phase::optimizer:
    case Phase::graph:
    case Phase::metrics:
      return true;
    default:
      return false;
  }
}

DeviceTimer::DeviceTimer(std::unique_ptr<DeviceEventSource> source, int64_t warmup_steps, int64_t sample_every)
    : source_(std::move(source)), stats_(warmup_steps), warmup_steps_(warmup_steps), sample_every_(sample_every) {
  if (!source_) throw std::invalid_argument("a device timer needs an event source, got null");
  if (sample_every < 1) throw std::invalid_argument("a device timer samples one step in " + std::to_string(sample_every) + " (expected >= 1)");
}

bool DeviceTimer::sampled() const {
  // decided at the step's first boundary: the thread search extends the warm-up step by step
  const int64_t after_warmup = steps_ended_ - stats_.warmup_steps();
  return after_warmup < 0 || after_warmup % sample_every_ == 0;
}

bool DeviceTimer::probing() const {
  const int64_t before_end = warmup_steps_ - steps_ended_;  // the probes: 3, 6, 9 steps before the warm-up ends
  return before_end > 0 && before_end % kProbeSpacing == 0 && before_end <= kProbes * kProbeSpacing &&
         steps_ended_ >= kFirstProbe;
}

void DeviceTimer::boundary(std::optional<Phase> next) {
  if (!in_step_) {
    in_step_ = true;
    recording_ = sampled();
  }
  const bool device_next = next && runs_on_device(*next);
  if (recording_ && ((open_ && runs_on_device(*open_)) || device_next)) {
    if (current_.marks.empty() && probing()) {
      // hold the device until the host has enqueued the whole step: twice the host's last step
      held_ = source_->hold(hold_factor_ * static_cast<double>(last_host_step_ns_) * 1e-6 + 0.1);
      probes_made_ += held_ ? 1 : 0;
    }
    current_.marks.emplace_back(source_->record(), device_next ? next : std::nullopt);
  }
  open_ = next;
}

void DeviceTimer::end_step(const StepRecord& host) {
  boundary(std::nullopt);
  in_step_ = false;
  current_.record.epoch = host.epoch;
  current_.record.batch = host.batch;
  current_.record.rank = host.rank;
  current_.record.samples = host.samples;
  ++steps_ended_;
  last_host_step_ns_ = host.step_ns;
  if (held_ && !current_.marks.empty()) {
    // valid when the device had not reached the step's first event: everything was queued before it
    current_.probe = !source_->done(*current_.marks.front().first);
    if (!current_.probe) hold_factor_ = std::min(hold_factor_ * 2, 64.0);
  }
  held_ = false;
  const std::size_t marks = current_.marks.size();
  if (marks > 0) {  // a step that recorded nothing (not sampled) leaves current_ as it was: empty, with room
    pending_.push_back(std::move(current_));
    current_ = Step{};
    current_.marks.reserve(marks);  // the next sampled step records as many: one allocation, not one per doubling
  }
  resolve_passed();
}

void DeviceTimer::resolve_passed() {
  // stream order: a step is passed when its last event is; stop at the first that is not
  while (!pending_.empty() && source_->done(*pending_.front().marks.back().first)) {
    resolve(pending_.front());
    pending_.pop_front();
    ++resolved_in_loop_;
  }
}

void DeviceTimer::finish() {
  while (!pending_.empty()) {
    source_->wait(*pending_.front().marks.back().first);
    resolve(pending_.front());
    pending_.pop_front();
    ++resolved_at_finish_;
  }
}

std::optional<double> DeviceTimer::busy_ms() const {
  if (busy_ms_.empty()) return std::nullopt;
  std::vector<double> sorted = busy_ms_;
  std::sort(sorted.begin(), sorted.end());
  return sorted[sorted.size() / 2];
}

std::vector<Phase> DeviceTimer::measured_phases() const {
  std::vector<Phase> out;
  for (Phase p : all_phases()) {
    if (measured_[static_cast<std::size_t>(p)]) out.push_back(p);
  }
  return out;
}

void DeviceTimer::resolve(Step& step) {
  StepRecord& r = step.record;
  const auto ns = [&](const DeviceEvent& from, const DeviceEvent& to) {
    return static_cast<int64_t>(std::llround(source_->elapsed_ms(from, to) * 1e6));
  };
  for (std::size_t i = 0; i + 1 < step.marks.size(); ++i) {
    if (!step.marks[i].second) continue;  // a gap between device phases
    measured_[static_cast<std::size_t>(*step.marks[i].second)] = true;
    r.phase_ns[static_cast<std::size_t>(*step.marks[i].second)] += ns(*step.marks[i].first, *step.marks[i + 1].first);
  }
  r.step_ns = ns(*step.marks.front().first, *step.marks.back().first);
  if (step.probe) busy_ms_.push_back(static_cast<double>(r.step_ns) * 1e-6);
  r.set_other();
  stats_.add(r);
  for (auto& mark : step.marks) source_->release(std::move(mark.first));
}

}  // namespace fitscope
