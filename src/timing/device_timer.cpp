#include "fitscope/timing/device_timer.hpp"

#include <cmath>
#include <stdexcept>

namespace fitscope {

bool runs_on_device(Phase phase) {
  switch (phase) {
    case Phase::h2d:
    case Phase::forward:
    case Phase::backward:
    case Phase::comm:
    case Phase::optimizer:
    case Phase::metrics:
      return true;
    default:
      return false;
  }
}

DeviceTimer::DeviceTimer(std::unique_ptr<DeviceEventSource> source, int64_t warmup_steps)
    : source_(std::move(source)), stats_(warmup_steps) {
  if (!source_) throw std::invalid_argument("a device timer needs an event source, got null");
}

void DeviceTimer::boundary(std::optional<Phase> next) {
  const bool device_next = next && runs_on_device(*next);
  if ((open_ && runs_on_device(*open_)) || device_next) {
    current_.marks.emplace_back(source_->record(), device_next ? next : std::nullopt);
  }
  open_ = next;
}

void DeviceTimer::end_step(const StepRecord& host) {
  boundary(std::nullopt);
  current_.record.epoch = host.epoch;
  current_.record.batch = host.batch;
  current_.record.rank = host.rank;
  current_.record.samples = host.samples;
  const std::size_t marks = current_.marks.size();
  if (marks > 0) pending_.push_back(std::move(current_));
  current_ = Step{};
  current_.marks.reserve(marks);  // the next step records as many: one allocation, not one per doubling
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
  r.set_other();
  stats_.add(r);
  for (auto& mark : step.marks) source_->release(std::move(mark.first));
}

}  // namespace fitscope
