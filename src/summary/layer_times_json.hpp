#pragma once
// summary.json's sections below the phases: `layers` (LayerTimes per probed step: ms, GFLOP), the
// `machine_peak` the layers' rates are set against, and `memory` (MB); each written and read back.

#include <nlohmann/json.hpp>

#include "fitscope/timing/layer_times.hpp"
#include "fitscope/summary/run_summary.hpp"
#include "fitscope/timing/machine_peak.hpp"
#include "summary_reader.hpp"

namespace fitscope::detail {

nlohmann::json layer_times_to_json(const LayerTimes& t);
/// `r` is the `layers` object.
LayerTimes layer_times_from_json(const Reader& r);
nlohmann::json machine_peak_to_json(const MachinePeak& p);
nlohmann::json memory_to_json(const MemorySummary& m);
MemorySummary memory_from_json(const Reader& r);
MachinePeak machine_peak_from_json(const Reader& r);

}  // namespace fitscope::detail
