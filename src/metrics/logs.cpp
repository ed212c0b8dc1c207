#include "fitscope/metrics/logs.hpp"

#include <algorithm>
#include <stdexcept>

namespace fitscope {

Logs::Logs(std::initializer_list<Entry> entries) {
  for (const auto& e : entries) set(e.first, e.second);
}

void Logs::set(const std::string& key, double value) {
  for (auto& e : entries_) {
    if (e.first == key) {
      e.second = value;
      return;
    }
  }
  entries_.emplace_back(key, value);
}

bool Logs::contains(const std::string& key) const { return get(key).has_value(); }

std::optional<double> Logs::get(const std::string& key) const {
  for (const auto& e : entries_) {
    if (e.first == key) return e.second;
  }
  return std::nullopt;
}

double Logs::at(const std::string& key) const {
  if (auto v = get(key)) return *v;
  std::string present;
  for (const auto& e : entries_) present += (present.empty() ? "" : ", ") + e.first;
  throw std::out_of_range("logs have no key '" + key + "' (present: " +
                          (present.empty() ? "none" : present) + ")");
}

void Logs::merge(const Logs& other) {
  for (const auto& e : other) set(e.first, e.second);
}

Logs Logs::with_prefix(const std::string& prefix) const {
  Logs out;
  for (const auto& e : entries_) out.entries_.emplace_back(prefix + e.first, e.second);
  return out;
}

std::vector<std::string> Logs::keys() const {
  std::vector<std::string> out;
  out.reserve(entries_.size());
  for (const auto& e : entries_) out.push_back(e.first);
  return out;
}

}  // namespace fitscope
