#include "fitscope/threads/blas_library.hpp"

#include <dlfcn.h>
#include <link.h>

#include <vector>

namespace fitscope {
namespace {

/// The paths of every shared object loaded now.
std::vector<std::string> loaded_objects() {
  std::vector<std::string> paths;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        if (info->dlpi_name && *info->dlpi_name) static_cast<std::vector<std::string>*>(out)->push_back(info->dlpi_name);
        return 0;
      },
      &paths);
  return paths;
}

template <typename F>
F symbol(void* handle, const char* name) {
  return reinterpret_cast<F>(dlsym(handle, name));
}

// BLIS takes and returns dim_t (int64_t on LP64 builds): adapted to the int API through statics
int64_t (*bli_get)() = nullptr;
void (*bli_set)(int64_t) = nullptr;
int bli_get_int() { return static_cast<int>(bli_get()); }
void bli_set_int(int n) { bli_set(n); }

}  // namespace

int64_t BlasLibrary::threads() const { return get_ ? get_() : 1; }

void BlasLibrary::set_threads(int64_t threads) const {
  if (!set_) return;
  threads = threads < 1 ? 1 : threads;
  // unchanged: nothing to do (a pool at 1 is not woken by single-threaded calls, so it does not spin),
  // and a shutdown of a pool already down costs tens of microseconds on every fit
  if (get_ && get_() == threads) return;
  set_(static_cast<int>(threads));
  if (threads <= 1 && shutdown_) shutdown_();
}

void BlasLibrary::multiply(int n) const {
  if (!sgemm_) return;
  std::vector<float> a(static_cast<size_t>(n) * n, 1.0f), c(a.size());
  constexpr int kRowMajor = 101, kNoTrans = 111;
  sgemm_(kRowMajor, kNoTrans, kNoTrans, n, n, n, 1.0f, a.data(), n, a.data(), n, 0.0f, c.data(), n);
}

const BlasLibrary& loaded_blas() {
  static const BlasLibrary blas = [] {
    BlasLibrary b;
    for (const std::string& path : loaded_objects()) {
      void* handle = dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD);  // already loaded: never loads
      if (!handle) continue;
      using Sgemm = decltype(b.sgemm_);
      if (auto set = symbol<void (*)(int)>(handle, "openblas_set_num_threads")) {
        const auto parallel = symbol<int (*)()>(handle, "openblas_get_parallel");
        const int kind = parallel ? parallel() : 1;
        b.name_ = kind == 0 ? "openblas-serial" : kind == 2 ? "openblas-openmp" : "openblas-pthread";
        b.get_ = symbol<int (*)()>(handle, "openblas_get_num_threads");
        if (kind != 0) b.set_ = set;  // the serial flavour has no pool
        if (kind == 1) b.shutdown_ = symbol<int (*)()>(handle, "blas_thread_shutdown_");
      } else if ((bli_set = symbol<void (*)(int64_t)>(handle, "bli_thread_set_num_threads"))) {
        bli_get = symbol<int64_t (*)()>(handle, "bli_thread_get_num_threads");
        b.name_ = "blis";
        b.set_ = bli_set_int;
        if (bli_get) b.get_ = bli_get_int;
      } else if (auto mkl = symbol<void (*)(int)>(handle, "MKL_Set_Num_Threads")) {
        b.name_ = "mkl";
        b.set_ = mkl;
        b.get_ = symbol<int (*)()>(handle, "MKL_Get_Max_Threads");
      } else {
        dlclose(handle);  // drops the reference the NOLOAD open added
        continue;
      }
      b.sgemm_ = symbol<Sgemm>(handle, "cblas_sgemm");
      break;
    }
    return b;
  }();
  return blas;
}

}  // namespace fitscope
