#pragma once
/// MachinePeak: the most this machine does on the cores a run computes on (or its GPU), measured on
/// the machine (a CPU has no datasheet figure to read): a float32 matrix product's GFLOP/s and a large
/// copy's GB/s.
/// The layers' achieved GFLOP/s are set against it (train/measure_peak.hpp measures it and keeps it per
/// machine and setting). A plain value.

#include <cstdint>
#include <string>

namespace fitscope {

struct MachinePeak {
  double gemm_gflops = 0;  ///< at::mm of two 1024 x 1024 float32 matrices (4096 on a GPU), the best of a few
  double memory_gbps = 0;  ///< a 64 MiB float32 copy, bytes read and written per second, the best of a few
  int64_t cores = 0;       ///< the threads it ran on: the run's intra-op or BLAS threads, the more (0 on a GPU)
  std::string key;         ///< what it holds for: the host, the CPU's model, the cores, libtorch, BLAS
  bool cached = false;     ///< read from the cache, not measured by this process's fit
  std::string device = "cpu";  ///< where it ran: "cpu" or "cuda:N"

  /// "2 cores", "1 core" or "cuda:0": what the matrix product ran on.
  std::string ran_on() const {
    if (device != "cpu") return device;
    return std::to_string(cores) + (cores == 1 ? " core" : " cores");
  }
};

}  // namespace fitscope
