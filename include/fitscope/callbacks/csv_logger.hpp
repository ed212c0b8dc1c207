#pragma once
/// CSVLogger: Keras's CSVLogger. Writes one row per epoch to `filename`: "epoch" (0-based) then every
/// log key in sorted order, header first; with `append` it continues an existing file: its header's
/// columns, its rows of the epochs before the first one this fit ends (a resumed run redoes the later
/// ones). Each row is flushed when written. Only observes: may run async.

#include <fstream>
#include <string>
#include <vector>

#include "fitscope/callbacks/callback.hpp"

namespace fitscope {

class CSVLogger : public Callback {
 public:
  CallbackTraits traits() const override {
    CallbackTraits t;
    t.chief_only = true;
    t.reads_batch_logs = false;
    return t;
  }
  explicit CSVLogger(std::string filename, char separator = ',', bool append = false);
  void on_train_begin(Logs& logs) override;
  void on_epoch_end(int64_t epoch, Logs& logs) override;
  void on_train_end(Logs& logs) override;

 private:
  std::string filename_;
  char separator_;
  bool append_;
  std::ofstream out_;
  std::vector<std::string> keys_;  // the header's keys, fixed by the first row
  std::vector<std::string> previous_;  // with append: the existing file's lines, until the first row
  bool header_written_ = false;
};

}  // namespace fitscope
