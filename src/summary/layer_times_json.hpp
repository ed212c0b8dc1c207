#pragma once
// summary.json's `layers`: LayerTimes per probed step (ms, GFLOP), and back; `machine_peak`, which the
// layers' rates are set against.

#include <nlohmann/json.hpp>

#include "fitscope/timing/layer_times.hpp"
#include "fitscope/timing/machine_peak.hpp"
#include "summary_reader.hpp"

namespace fitscope::detail {

nlohmann::json layer_times_to_json(const LayerTimes& t);
/// `r` is the `layers` object.
LayerTimes layer_times_from_json(const Reader& r);
nlohmann::json machine_peak_to_json(const MachinePeak& p);
MachinePeak machine_peak_from_json(const Reader& r);

}  // namespace fitscope::detail
