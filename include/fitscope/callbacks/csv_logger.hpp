#pragma once
/// CSVLogger: Keras's CSVLogger. Writes one row per epoch to `filename`: "epoch" (0-based) then every
/// log key in sorted order, header first; with `append` it adds to an existing file without a new
/// header. Each row is flushed when written. Only observes: may run async.

#include <fstream>
#include <string>
#include <vector>

#include "fitscope/callbacks/callback.hpp"

namespace fitscope {

class CSVLogger : public Callback {
 public:
  bool chief_only() const override { return true; }
  explicit CSVLogger(std::string filename, char separator = ',', bool append = false);
  bool reads_batch_logs() const override { return false; }
  void on_train_begin(const Logs& logs) override;
  void on_epoch_end(int64_t epoch, const Logs& logs) override;
  void on_train_end(const Logs& logs) override;

 private:
  std::string filename_;
  char separator_;
  bool append_;
  std::ofstream out_;
  std::vector<std::string> keys_;  // the header's keys, fixed by the first row
  bool header_written_ = false;
};

}  // namespace fitscope
