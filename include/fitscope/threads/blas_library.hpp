#pragma once
/// BlasLibrary: the BLAS library this process actually loaded, found at run time (Debian switches
/// libblas.so.3 between OpenBLAS's pthread, OpenMP and serial flavours, BLIS and the reference BLAS
/// with update-alternatives, so nothing known at build time says which), and its thread pool sized
/// through the library's own API: openblas_set_num_threads, bli_thread_set_num_threads or
/// MKL_Set_Num_Threads. A library without such an API (the reference BLAS) has no pool: threads() is 1
/// and set_threads() does nothing.
/// loaded_blas() looks once, on first use; the object is immutable. set_threads() changes a
/// process-wide setting: call it from one thread, outside BLAS calls (apply_threads does).

#include <cstdint>
#include <string>

namespace fitscope {

class BlasLibrary {
 public:
  /// "openblas-pthread", "openblas-openmp", "openblas-serial", "blis", "mkl", or "none" when no
  /// library with a thread API is loaded.
  const std::string& name() const { return name_; }
  /// Whether the library runs its own pool of threads whose size can be set.
  bool has_pool() const { return set_ != nullptr; }
  /// The pool's thread count, read through the library's own query (1 without a pool).
  int64_t threads() const;
  /// Sets the pool's thread count (>= 1). At 1, OpenBLAS's pthread pool is also shut down: its idle
  /// threads spin for about 0.1 s after each use, taking a core from the training; a larger count
  /// starts them again at the next multiplication. Does nothing when the count is already `threads`.
  void set_threads(int64_t threads) const;
  /// Runs a single-precision n x n x n matrix product through the library's own cblas_sgemm (no-op
  /// without one): work that only the BLAS pool's threads share with the caller.
  void multiply(int n) const;

 private:
  friend const BlasLibrary& loaded_blas();
  std::string name_ = "none";
  int (*get_)() = nullptr;
  void (*set_)(int) = nullptr;
  int (*shutdown_)() = nullptr;
  void (*sgemm_)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*,
                 int) = nullptr;
};

/// The BLAS library of this process (see above).
const BlasLibrary& loaded_blas();

}  // namespace fitscope
