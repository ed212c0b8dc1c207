#include "fitscope/train/freed_memory.hpp"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace fitscope {

bool keep_freed_memory() {
#if defined(__GLIBC__)
  // 32 MiB is glibc's largest mmap threshold (DEFAULT_MMAP_THRESHOLD_MAX on 64 bits); setting it also
  // stops the dynamic adjustment. The trim threshold: never (the top is kept).
  const bool mmap = mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024) == 1;
  const bool trim = mallopt(M_TRIM_THRESHOLD, -1) == 1;
  return mmap && trim;
#else
  return false;
#endif
}

}  // namespace fitscope
