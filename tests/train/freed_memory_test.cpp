#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstddef>
#include <cstdlib>

#include "fitscope/train/freed_memory.hpp"

namespace {

/// Writes every page of `block` (volatile: a write the compiler may not leave out before a free).
void touch(char* block, std::size_t bytes) {
  volatile char* pages = block;
  for (std::size_t i = 0; i < bytes; i += 4096) pages[i] = 1;
}

long minor_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

}  // namespace

#if defined(__GLIBC__)
/// A block a step frees and the next allocates again is not faulted in again: 16 MiB (4,096 pages)
/// freed and allocated again take far fewer faults than pages the second time.
TEST(FreedMemory, ABlockFreedAndAllocatedAgainIsNotFaultedInAgain) {
#ifdef FITSCOPE_SANITIZED
  GTEST_SKIP() << "the sanitizers' allocator replaces glibc's malloc (and keeps freed blocks in quarantine): run in the "
                  "plain and libtorch 2.6 builds";
#endif
  ASSERT_TRUE(fitscope::keep_freed_memory());
  constexpr std::size_t kBytes = 16u << 20;
  char* first = static_cast<char*>(std::malloc(kBytes));
  ASSERT_NE(first, nullptr);
  touch(first, kBytes);  // every page faulted in
  std::free(first);
  const long before = minor_faults();
  char* again = static_cast<char*>(std::malloc(kBytes));
  ASSERT_NE(again, nullptr);
  touch(again, kBytes);
  const long faults = minor_faults() - before;
  std::free(again);
  EXPECT_LT(faults, 256) << "of " << kBytes / 4096 << " pages";
}
#endif
