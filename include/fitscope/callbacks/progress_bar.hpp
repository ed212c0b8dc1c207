#pragma once
/// ProgressBar: Keras's progress bar. On a terminal it redraws one line per epoch as batches end
///   12/94 [==>...........................] - ETA: 3s - loss: 0.4100 - accuracy: 0.8800 - 10.2ms/step
/// at most every `refresh_s`, fitted to the terminal's width (the bar shrinks, then the line is cut:
/// no wrapping); otherwise (a pipe, a file, or `one_line_per_epoch`) it prints one line per epoch
/// when the epoch ends, without reading batch logs. Writes to the given stream, which must outlive the
/// callback. Training thread only.

#include <chrono>
#include <cstdint>
#include <iosfwd>

#include "fitscope/callbacks/callback.hpp"

namespace fitscope {

struct ProgressBarOptions {
  std::ostream* out = nullptr;    ///< where to write; nullptr = std::cout
  bool one_line_per_epoch = false;  ///< force the one-line mode (--quiet); also used when not a tty
  double refresh_s = 0.05;        ///< minimum time between redraws on a terminal
  int width = 30;                 ///< characters of the bar, at most
  int columns = 0;                ///< the line's width; 0 = the terminal's (TIOCGWINSZ, else $COLUMNS, else 80)
};

/// Ends the line a progress bar left open (drawn with \r, no newline yet), so that what is printed
/// next (a warning) starts on a line of its own; the bar redraws below it. Thread-safe; a no-op when
/// no line is open.
void end_progress_line();

class ProgressBar : public Callback {
 public:
  CallbackTraits traits() const override {
    CallbackTraits t;
    t.chief_only = true;
    t.reads_batch_logs = !one_line_;
    return t;
  }
  explicit ProgressBar(ProgressBarOptions options = {});

  void on_epoch_begin(int64_t epoch, Logs& logs) override;
  void on_train_batch_end(int64_t batch, Logs& logs) override;
  void on_epoch_end(int64_t epoch, Logs& logs) override;

 private:
  using clock = std::chrono::steady_clock;
  void draw(int64_t done, const Logs& logs, bool final_line);

  ProgressBarOptions options_;
  std::ostream& out_;
  bool one_line_;
  int columns_;
  clock::time_point epoch_start_;
  clock::time_point last_draw_;
  int64_t steps_ = 0;
  int64_t done_ = 0;
};

}  // namespace fitscope
