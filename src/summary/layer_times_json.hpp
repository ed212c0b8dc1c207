#pragma once
// summary.json's `layers`: LayerTimes per probed step (ms, GFLOP), and back.

#include <nlohmann/json.hpp>

#include "fitscope/timing/layer_times.hpp"
#include "summary_reader.hpp"

namespace fitscope::detail {

nlohmann::json layer_times_to_json(const LayerTimes& t);
/// `r` is the `layers` object.
LayerTimes layer_times_from_json(const Reader& r);

}  // namespace fitscope::detail
