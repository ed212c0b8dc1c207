#pragma once
/// Logs: the ordered name -> value map that the loop hands to callbacks, like the `logs` dict of Keras
/// (`loss`, `accuracy`, `val_loss`, `val_accuracy`, `lr`, ...).
///
/// A plain value type without libtorch: values are host doubles, already materialised, so a callback
/// never touches a tensor the training thread is mutating. Keys keep their first-insertion order.
/// Not thread-safe; copy it to hand it to another thread.

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fitscope {

class Logs {
 public:
  using Entry = std::pair<std::string, double>;

  Logs() = default;
  Logs(std::initializer_list<Entry> entries);

  /// Inserts `key` at the end, or overwrites its value where it exists (keeping its position).
  void set(const std::string& key, double value);
  /// Whether `key` is present.
  bool contains(const std::string& key) const;
  /// The value of `key`; throws std::out_of_range naming the key and the keys present.
  double at(const std::string& key) const;
  /// The value of `key`, or nothing.
  std::optional<double> get(const std::string& key) const;
  /// Copies every entry of `other` into this (set semantics).
  void merge(const Logs& other);
  /// A copy whose keys are prefixed, e.g. with "val_".
  Logs with_prefix(const std::string& prefix) const;
  /// The keys in order.
  std::vector<std::string> keys() const;

  bool empty() const { return entries_.empty(); }
  std::size_t size() const { return entries_.size(); }
  void clear() { entries_.clear(); }
  std::vector<Entry>::const_iterator begin() const { return entries_.begin(); }
  std::vector<Entry>::const_iterator end() const { return entries_.end(); }

  friend bool operator==(const Logs& a, const Logs& b) { return a.entries_ == b.entries_; }

 private:
  std::vector<Entry> entries_;
};

}  // namespace fitscope
