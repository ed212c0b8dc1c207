#pragma once
/// measure_machine_peak: MachinePeak (timing/machine_peak.hpp) on `cores` threads: the matrix product
/// runs with libtorch's intra-op threads and the BLAS pool both set to `cores` (restored after), the
/// copy on the intra-op threads. About 0.3 s; kept in `cache_dir`/machine_peak.json by
/// MachinePeak::key (host, CPU model, cores, libtorch, BLAS), so a machine measures each setting once;
/// a cache that cannot be read or written is measured anew, never an error. Call it from the training
/// thread, outside a step.

#include <cstdint>
#include <string>

#include "fitscope/timing/machine_peak.hpp"

namespace fitscope {

/// $FITSCOPE_CACHE_DIR, else $XDG_CACHE_HOME/fitscope, else $HOME/.cache/fitscope; "" when none is set.
std::string default_peak_cache_dir();

/// `cache_dir` "": measured each call, not kept.
MachinePeak measure_machine_peak(int64_t cores, const std::string& cache_dir = default_peak_cache_dir());
/// The same on CUDA device `index` (float32, TF32 as libtorch is set, in the key), timed with CUDA
/// events; std::runtime_error where this libtorch has no CUDA.
MachinePeak measure_cuda_peak(int64_t index, const std::string& cache_dir = default_peak_cache_dir());

}  // namespace fitscope
