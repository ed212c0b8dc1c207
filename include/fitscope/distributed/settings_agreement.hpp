#pragma once
/// Ranks that agree: a data-parallel run whose ranks were started with different settings (another
/// learning rate, seed, optimizer or batch size on one rank) trains something no one asked for, or
/// fails later with a backend's message. require_same_settings compares every rank's settings with
/// the chief's before the first collective of training, and every rank refuses the same way.

#include <string>
#include <utility>
#include <vector>

#include "fitscope/distributed/context.hpp"

namespace fitscope::distributed {

/// Named settings, in order: (name, value as text).
using Settings = std::vector<std::pair<std::string, std::string>>;

/// A collective (every rank calls it at the same point): gathers every rank's `mine` and, when a rank's
/// differ from the chief's, throws std::invalid_argument on every rank naming the first setting that
/// differs on the lowest such rank, and both values. Returns at once in a single process.
void require_same_settings(Context& context, const Settings& mine);

/// The `name = value` lines of a TOML text (config.toml: comments and blank lines left out), those
/// named in `rank_local` left out too: settings each rank may hold its own of.
Settings settings_of_lines(const std::string& text, const std::vector<std::string>& rank_local = {});

}  // namespace fitscope::distributed
