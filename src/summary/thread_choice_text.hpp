#pragma once
// Private: the thread search's choice in words, shared by the verdict and the printout.

#include <string>

#include "fitscope/threads/thread_tuner.hpp"

namespace fitscope::detail {

/// Why the search kept its setting: "kept intra-op 2, BLAS 1: the fastest, 1.45x faster than intra-op 1,
/// BLAS 1", or, when a faster one was measured later, "kept intra-op 1, BLAS 2: within 4% of the fastest
/// (intra-op 1, BLAS 1: 0.056 ms against 0.058 ms) and measured before it; a later setting replaces an
/// earlier one only when 5% faster". Empty where nothing was measured.
std::string kept_reason(const ThreadChoice& t);

/// The re-checks mid-run, "; " apart: "re-checked at step 412, the step (less its data wait) having moved
/// from 4.100 ms to 9.800 ms at the median: 1x2 12.000 ms, 1x1 6.100 ms; switched to intra-op 1, BLAS 1"
/// (or "kept intra-op 2, BLAS 1"). Empty without one.
std::string rechecks_text(const ThreadChoice& t);

}  // namespace fitscope::detail
