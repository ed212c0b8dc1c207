#include "fitscope/distributed/restart_history.hpp"

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace fitscope::distributed {
namespace {

using nlohmann::json;

template <typename T>
json optional_value(const std::optional<T>& value) {
  return value ? json(*value) : json(nullptr);
}

template <typename T>
std::optional<T> read_optional(const json& object, const char* key) {
  const json& v = object.at(key);
  if (v.is_null()) return std::nullopt;
  return v.get<T>();
}

}  // namespace

std::string RestartHistory::to_json() const {
  json list = json::array();
  for (const RestartRecord& r : restarts) {
    list.push_back({{"reason", r.reason},
                    {"failed_at_step", optional_value(r.failed_at_step)},
                    {"resumed_from_step", optional_value(r.resumed_from_step)},
                    {"lost_since_unix_s", r.lost_since_unix_s},
                    {"lost_s", optional_value(r.lost_s)}});
  }
  return json{{"job_started_unix_s", job_started_unix_s}, {"restarts", list}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

RestartHistory RestartHistory::from_json(const std::string& text, const std::string& source) {
  RestartHistory history;
  try {
    const json j = json::parse(text);
    history.job_started_unix_s = j.at("job_started_unix_s").get<double>();
    for (const json& r : j.at("restarts")) {
      RestartRecord record;
      record.reason = r.at("reason").get<std::string>();
      record.failed_at_step = read_optional<int64_t>(r, "failed_at_step");
      record.resumed_from_step = read_optional<int64_t>(r, "resumed_from_step");
      record.lost_since_unix_s = r.at("lost_since_unix_s").get<double>();
      record.lost_s = read_optional<double>(r, "lost_s");
      history.restarts.push_back(std::move(record));
    }
  } catch (const json::exception& e) {
    throw std::invalid_argument(source + ": not the history of a fitscope launch (" + e.what() + ")");
  }
  return history;
}

std::optional<RestartHistory> restart_history_from_environment() {
  const char* text = std::getenv("FITSCOPE_RESTARTS");
  if (!text) return std::nullopt;
  return RestartHistory::from_json(text, "environment variable FITSCOPE_RESTARTS");
}

}  // namespace fitscope::distributed
