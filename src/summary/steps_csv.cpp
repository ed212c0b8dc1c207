#include "fitscope/summary/steps_csv.hpp"

#include <cstdio>
#include <stdexcept>

namespace fitscope {

StepsCsvWriter::StepsCsvWriter(const std::string& path) : path_(path), out_(path, std::ios::trunc) {
  if (!out_) throw std::runtime_error("cannot create " + path + ": check that the directory exists");
  buffer_ = header() + "\n";
}

std::string StepsCsvWriter::header() {
  std::string h = "epoch,batch,rank,step_ms";
  for (Phase p : all_phases()) h += "," + std::string(phase_name(p)) + "_ms";
  return h + ",probed";
}

void StepsCsvWriter::on_step(const StepRecord& r) {
  char cell[64];
  std::snprintf(cell, sizeof cell, "%lld,%lld,%lld,%.6f", static_cast<long long>(r.epoch),
                static_cast<long long>(r.batch), static_cast<long long>(r.rank), r.step_ns * 1e-6);
  buffer_ += cell;
  for (int64_t ns : r.phase_ns) {
    std::snprintf(cell, sizeof cell, ",%.6f", ns * 1e-6);
    buffer_ += cell;
  }
  buffer_ += r.probed ? ",1\n" : ",0\n";
  if (++rows_ % 4096 == 0) finish();
}

void StepsCsvWriter::finish() {
  out_ << buffer_;
  out_.flush();
  buffer_.clear();
  if (!out_) throw std::runtime_error("cannot write " + path_);
}

}  // namespace fitscope
