// The machine's measured peak (measure_machine_peak: at::mm of 1024 x 1024 float32 on the run's cores)
// against a standalone sgemm of the same size on the same threads: the loaded BLAS library's own
// cblas_sgemm on buffers made once, its pool set to the same count. Both best of 5 after one that warms up,
// `rounds` times alternating; the ratio peak / sgemm per round and its median.
//   ./bench_machine_peak [cores, default: all usable] [rounds, default 5]

#include <ATen/Parallel.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "fitscope/fitscope.hpp"
#include "rounds.hpp"

using namespace fitscope;

int main(int argc, char** argv) {
  const int64_t cores = argc > 1 ? std::atoll(argv[1]) : usable_cores().cores;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 5;
  const BlasLibrary& blas = loaded_blas();
  using Sgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*, int);
  const auto sgemm_of_blas = reinterpret_cast<Sgemm>(dlsym(RTLD_DEFAULT, "cblas_sgemm"));
  if (!sgemm_of_blas) {
    std::fprintf(stderr, "bench_machine_peak: no cblas_sgemm in this process\n");
    return 1;
  }
  constexpr int kN = 1024, kRowMajor = 101, kNoTrans = 111;
  std::vector<float> a(kN * kN, 1.0f), c(a.size());
  const auto multiply = [&] { sgemm_of_blas(kRowMajor, kNoTrans, kNoTrans, kN, kN, kN, 1.0f, a.data(), kN, a.data(), kN, 0.0f, c.data(), kN); };
  std::vector<double> ratios;
  for (int r = 0; r < rounds; ++r) {
    const auto sgemm = [&] {
      blas.set_threads(cores);
      multiply();
      double best = 1e30;
      for (int i = 0; i < 5; ++i) best = std::min(best, bench::seconds(multiply));
      return 2.0 * 1024 * 1024 * 1024 / best * 1e-9;
    };
    const auto peak = [&] { return measure_machine_peak(cores, /*cache_dir=*/"").gemm_gflops; };
    double a, b;
    if (r % 2 == 0) {
      a = peak();
      b = sgemm();
    } else {
      b = sgemm();
      a = peak();
    }
    ratios.push_back(a / b);
    std::printf("round %d: measure_machine_peak %.1f GFLOP/s, %s cblas_sgemm %.1f GFLOP/s: %.3f\n", r + 1, a, blas.name().c_str(), b,
                a / b);
  }
  std::printf("measured peak / standalone sgemm on %lld cores, median of %d rounds: %.3f\n", static_cast<long long>(cores), rounds,
              bench::median(ratios));
  return 0;
}
