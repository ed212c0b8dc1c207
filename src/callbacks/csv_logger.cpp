#include "fitscope/callbacks/csv_logger.hpp"

#include <charconv>
#include <string_view>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

namespace fitscope {

CSVLogger::CSVLogger(std::string filename, char separator, bool append)
    : filename_(std::move(filename)), separator_(separator), append_(append) {}

void CSVLogger::on_train_begin(Logs&) {
  const bool existing = append_ && std::filesystem::exists(filename_) && std::filesystem::file_size(filename_) > 0;
  out_.open(filename_, append_ ? std::ios::app : std::ios::trunc);
  if (!out_) throw std::runtime_error("CSVLogger cannot open " + filename_);
  header_written_ = existing;
  keys_.clear();
}

void CSVLogger::on_epoch_end(int64_t epoch, Logs& logs) {
  if (keys_.empty()) {
    keys_ = logs.keys();
    std::sort(keys_.begin(), keys_.end());
  }
  if (!header_written_) {
    out_ << "epoch";
    for (const auto& key : keys_) out_ << separator_ << key;
    out_ << "\n";
    header_written_ = true;
  }
  out_ << epoch;
  char cell[40];
  for (const auto& key : keys_) {
    const auto value = logs.get(key);
    if (value) {
      // the shortest text that reads back as the same double (5.2, not 5.2000000000000002)
      const auto end = std::to_chars(cell, cell + sizeof cell, *value).ptr;
      out_ << separator_ << std::string_view(cell, static_cast<std::size_t>(end - cell));
    } else {
      out_ << separator_ << "NA";
    }
  }
  out_ << "\n";
  out_.flush();
  if (!out_) throw std::runtime_error("CSVLogger cannot write " + filename_);
}

void CSVLogger::on_train_end(Logs&) { out_.close(); }

}  // namespace fitscope
