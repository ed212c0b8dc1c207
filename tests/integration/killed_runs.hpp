#pragma once
// What the tests of killed and resumed `fitscope train` processes share: a command as shell words, a
// run SIGKILLed once it has a backup of a given step, and final weights compared bit for bit.

#include <cstdint>
#include <string>
#include <vector>

#include "process.hpp"

namespace fitscope::testing {

/// `args` quoted for /bin/sh, each word in single quotes.
std::string shell_words(const std::vector<std::string>& args);

/// Starts `train` (a `fitscope train` writing into `run_dir`), polls until it has a backup of step
/// `step` or later (any such step, not exactly `step`: retention may delete that one sooner than a
/// loaded machine polls) and SIGKILLs it. Its out is "status=137\n" when it was killed so; exit code 3
/// when the run ended first.
ProcessResult kill_once_backed_up(const std::vector<std::string>& train, const std::string& run_dir, int64_t step);

/// Expects the final weights (model.weights.pt) of the runs in `a` and `b` to be equal, bit for bit.
void expect_same_weights(const std::string& a, const std::string& b);

}  // namespace fitscope::testing
