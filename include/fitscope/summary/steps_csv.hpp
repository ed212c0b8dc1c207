#pragma once
/// StepsCsvWriter: writes steps.csv, one row per step: epoch, batch, rank, step_ms and one
/// `<phase>_ms` column per phase in step order, then `probed` (1: the layers were probed in the step,
/// which the distributions leave out; the README's run-directory table). Rows are buffered and flushed at finish()
/// and every 4096 rows. Owns its file; used from the training thread only.

#include <fstream>
#include <string>

#include "fitscope/timing/step_sink.hpp"

namespace fitscope {

class StepsCsvWriter : public StepSink {
 public:
  /// Creates (truncates) `path` and writes the header; throws std::runtime_error naming the path.
  explicit StepsCsvWriter(const std::string& path);
  void on_step(const StepRecord& record) override;
  void finish() override;

  /// The header line, without the newline.
  static std::string header();

 private:
  std::string path_;
  std::ofstream out_;
  std::string buffer_;
  int64_t rows_ = 0;
};

}  // namespace fitscope
