#include "fitscope/callbacks/progress_bar.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <iostream>
#include <string>

#include "fitscope/io/terminal.hpp"

namespace fitscope {
namespace {

std::atomic<std::ostream*> open_line{nullptr};  // the stream whose last line a bar left open

std::string format_value(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, std::fabs(v) != 0 && std::fabs(v) < 1e-3 ? "%.4e" : "%.4f", v);
  return buf;
}

std::string format_seconds(double s) {
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof buf, "%d:%02d:%02d", static_cast<int>(s / 3600),
                  static_cast<int>(s / 60) % 60, static_cast<int>(s) % 60);
  } else if (s >= 60) {
    std::snprintf(buf, sizeof buf, "%d:%02d", static_cast<int>(s / 60), static_cast<int>(s) % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%.0fs", s);
  }
  return buf;
}

}  // namespace

ProgressBar::ProgressBar(ProgressBarOptions options)
    : options_(options),
      out_(options.out ? *options.out : std::cout),
      one_line_(options.one_line_per_epoch || (options.out == nullptr && !::isatty(STDOUT_FILENO))),
      columns_(options.columns > 0 ? options.columns : terminal_columns()) {}

void end_progress_line() {
  if (std::ostream* out = open_line.exchange(nullptr)) {
    *out << "\n";
    out->flush();
  }
}

void ProgressBar::on_epoch_begin(int64_t epoch, Logs&) {
  const auto& params = context().params();
  steps_ = params.steps_per_epoch;
  done_ = 0;
  out_ << "Epoch " << epoch + 1 << "/" << params.epochs << "\n";
  out_.flush();
  epoch_start_ = last_draw_ = clock::now();
}

void ProgressBar::on_train_batch_end(int64_t batch, Logs& logs) {
  done_ = batch + 1;
  if (one_line_) return;
  const auto now = clock::now();
  if (done_ < steps_ && std::chrono::duration<double>(now - last_draw_).count() < options_.refresh_s) return;
  last_draw_ = now;
  draw(done_, logs, false);
}

void ProgressBar::on_epoch_end(int64_t, Logs& logs) { draw(done_, logs, true); }

void ProgressBar::draw(int64_t done, const Logs& logs, bool final_line) {
  const double elapsed = std::chrono::duration<double>(clock::now() - epoch_start_).count();
  const double per_step = done > 0 ? elapsed / done : 0.0;
  const std::string total = std::to_string(steps_);
  std::string line = std::string(total.size() - std::min(total.size(), std::to_string(done).size()), ' ') +
                     std::to_string(done) + "/" + total;
  std::string tail;  // after the bar
  char step_time[48];
  std::snprintf(step_time, sizeof step_time, "%.1fms/step", per_step * 1e3);
  if (final_line) {
    tail += " - " + format_seconds(elapsed) + " " + step_time;
  } else {
    tail += " - ETA: " + format_seconds(per_step * (steps_ - done));
  }
  for (const auto& [key, value] : logs) tail += " - " + key + ": " + format_value(value);
  if (!final_line) tail += std::string(" - ") + step_time;
  if (one_line_) {
    out_ << line << tail << "\n";
    out_.flush();
    return;
  }
  // the bar gives way first (down to 10); then a transient line is cut short of the last column (it is
  // redrawn in place, so it must not wrap), while the epoch's final line is whole, wrapped by the
  // terminal if it must be, as Keras's: its metrics are what the user reads
  const int room = columns_ - 1 - static_cast<int>(line.size() + tail.size()) - 3;
  const int width = std::clamp(room, 10, options_.width);
  const int filled = steps_ > 0 ? static_cast<int>(width * done / steps_) : width;
  std::string bar(static_cast<std::size_t>(width), '.');
  for (int i = 0; i < filled && i < width; ++i) bar[static_cast<std::size_t>(i)] = '=';
  if (filled > 0 && filled < width) bar[static_cast<std::size_t>(filled - 1)] = '>';
  line += " [" + bar + "]" + tail;
  if (!final_line && static_cast<int>(line.size()) > columns_ - 1) line.resize(static_cast<std::size_t>(std::max(columns_ - 1, 0)));
  out_ << "\r" << line << "\033[K" << (final_line ? "\n" : "");
  out_.flush();
  open_line.store(final_line ? nullptr : &out_);
}

}  // namespace fitscope
