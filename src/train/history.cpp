#include "fitscope/train/history.hpp"

#include <limits>
#include <stdexcept>

namespace fitscope {

void History::append(int64_t epoch, const Logs& logs) {
  const std::size_t previous = epochs_.size();
  epochs_.push_back(epoch);
  for (const auto& [key, value] : logs) {
    auto& values = history_[key];
    values.resize(previous, std::numeric_limits<double>::quiet_NaN());
    values.push_back(value);
  }
  for (auto& [key, values] : history_) {
    values.resize(epochs_.size(), std::numeric_limits<double>::quiet_NaN());
  }
  last_ = logs;
}

const std::vector<double>& History::at(const std::string& key) const {
  auto it = history_.find(key);
  if (it == history_.end()) throw std::out_of_range("history has no key '" + key + "'");
  return it->second;
}

}  // namespace fitscope
