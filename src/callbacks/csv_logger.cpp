#include "fitscope/callbacks/csv_logger.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string_view>

namespace fitscope {

CSVLogger::CSVLogger(std::string filename, char separator, bool append)
    : filename_(std::move(filename)), separator_(separator), append_(append) {}

void CSVLogger::on_train_begin(Logs&) {
  keys_.clear();
  previous_.clear();
  header_written_ = false;
  if (append_) {
    std::ifstream in(filename_);
    for (std::string line; std::getline(in, line);) {
      if (!line.empty()) previous_.push_back(line);
    }
  }
  if (!previous_.empty()) return;  // the file is rewritten at the first epoch's end (see on_epoch_end)
  out_.open(filename_, std::ios::trunc);
  if (!out_) throw std::runtime_error("CSVLogger cannot open " + filename_);
}

void CSVLogger::on_epoch_end(int64_t epoch, Logs& logs) {
  if (!previous_.empty()) {
    // appending (a resumed run): the old header's columns, and the old rows of earlier epochs only; a
    // row of this epoch or a later one was written after the backup the run resumed from
    std::istringstream header(previous_.front());
    std::string key;
    std::getline(header, key, separator_);  // "epoch"
    while (std::getline(header, key, separator_)) keys_.push_back(key);
    out_.open(filename_, std::ios::trunc);
    if (!out_) throw std::runtime_error("CSVLogger cannot open " + filename_);
    out_ << previous_.front() << "\n";
    for (std::size_t i = 1; i < previous_.size(); ++i) {
      int64_t row_epoch = -1;
      const std::string& row = previous_[i];
      std::from_chars(row.data(), row.data() + row.size(), row_epoch);
      if (row_epoch >= 0 && row_epoch < epoch) out_ << row << "\n";
    }
    previous_.clear();
    header_written_ = true;
  }
  if (keys_.empty()) {
    keys_ = logs.keys();
    // as Keras 3: without val_ keys in the first row (a fit that validates later, or never), the val_
    // columns are there from the start, NA until a value comes
    const bool validated = std::any_of(keys_.begin(), keys_.end(), [](const std::string& k) { return k.rfind("val_", 0) == 0; });
    if (!validated) {
      const std::vector<std::string> train_keys = keys_;
      for (const auto& key : train_keys) {
        if (key != "learning_rate") keys_.push_back("val_" + key);
      }
    }
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
