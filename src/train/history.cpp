#include "fitscope/train/history.hpp"

#include <limits>
#include <stdexcept>

namespace fitscope {

void History::append(int64_t epoch, const Logs& logs) {
  epochs_.push_back(epoch);
  for (const auto& [key, value] : logs) history_[key].push_back(value);  // as Keras: the epochs that had it
  last_ = logs;
}

const std::vector<double>& History::at(const std::string& key) const {
  auto it = history_.find(key);
  if (it == history_.end()) throw std::out_of_range("history has no key '" + key + "'");
  return it->second;
}

}  // namespace fitscope
