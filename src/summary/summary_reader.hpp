#pragma once
// Reader: summary.json's keys read one object at a time, every error naming the file and the key's
// path (run_summary_json.cpp and the sections kept in files of their own).

#include <nlohmann/json.hpp>

#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace fitscope::detail {

/// Reads keys of one JSON object, naming the source and the key's path in every error.
class Reader {
 public:
  Reader(const nlohmann::json& object, std::string source, std::string path)
      : object_(object), source_(std::move(source)), path_(std::move(path)) {
    if (!object_.is_object()) fail(path_.empty() ? "the top level" : path_, "an object");
  }

  template <typename T>
  T get(const char* key) const {
    const nlohmann::json& v = at(key);
    try {
      return v.get<T>();
    } catch (const nlohmann::json::exception&) {
      fail(where(key), expected<T>());
    }
  }
  std::optional<double> optional_number(const char* key) const {
    const nlohmann::json& v = at(key);
    if (v.is_null()) return std::nullopt;
    if (!v.is_number()) fail(where(key), "a number or null");
    return v.get<double>();
  }
  Reader object(const char* key) const { return Reader(at(key), source_, where(key)); }
  const nlohmann::json& array(const char* key) const {
    const nlohmann::json& v = at(key);
    if (!v.is_array()) fail(where(key), "an array");
    return v;
  }
  /// The object at `key`, or nothing when it is null.
  std::optional<Reader> nullable_object(const char* key) const {
    const nlohmann::json& v = at(key);
    if (v.is_null()) return std::nullopt;
    return Reader(v, source_, where(key));
  }
  Reader element(const nlohmann::json& item, std::size_t index, const char* key) const {
    return Reader(item, source_, where(key) + "[" + std::to_string(index) + "]");
  }
  const nlohmann::json& raw() const { return object_; }
  const std::string& path() const { return path_; }

 private:
  std::string where(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  const nlohmann::json& at(const char* key) const {
    const auto it = object_.find(key);
    if (it == object_.end()) {
      throw std::invalid_argument(source_ + ": missing key \"" + where(key) +
                                  "\" (a summary.json of an older fitscope or a broken file; run the training again)");
    }
    return *it;
  }
  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw std::invalid_argument(source_ + ": key \"" + key + "\" is not " + what);
  }
  template <typename T>
  static std::string expected() {
    if constexpr (std::is_same_v<T, std::string>) return "a string";
    if constexpr (std::is_same_v<T, bool>) return "true or false";
    if constexpr (std::is_integral_v<T>) return "an integer";
    if constexpr (std::is_floating_point_v<T>) return "a number";
    return "of the expected type";
  }

  const nlohmann::json& object_;
  std::string source_, path_;
};


}  // namespace fitscope::detail
