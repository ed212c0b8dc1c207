#pragma once
/// Phase: the parts of one training step, in step order (ARCHITECTURE.md, "The life of a step").
/// `other` is the part of the step that no phase claims; it is computed, never entered.

#include <array>
#include <cstddef>
#include <string_view>

namespace fitscope {

enum class Phase : std::size_t {
  data_wait,
  h2d,
  forward,
  backward,
  comm,
  optimizer,
  graph,  ///< the captured step replayed (forward, loss, backward, optimizer as one CUDA graph)
  metrics,
  callbacks,
  checkpoint,
  other,
};

inline constexpr std::size_t kPhaseCount = 11;

/// The phase's name as written to steps.csv and summary.json ("data_wait", ...).
std::string_view phase_name(Phase phase);

/// All phases in step order.
constexpr std::array<Phase, kPhaseCount> all_phases() {
  return {Phase::data_wait, Phase::h2d,     Phase::forward,   Phase::backward,   Phase::comm,  Phase::optimizer,
          Phase::graph,     Phase::metrics, Phase::callbacks, Phase::checkpoint, Phase::other};
}

}  // namespace fitscope
