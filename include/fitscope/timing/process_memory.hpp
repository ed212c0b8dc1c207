#pragma once
/// The process's memory as the kernel counts it (/proc/self/status): its resident size now and its
/// resident peak since the start or the last reset_resident_peak(). Linux only; 0 where /proc does not
/// say. Process-wide (every thread's memory, every library's); thread-safe.

#include <cstdint>

namespace fitscope {

struct ProcessMemory {
  int64_t resident = 0;       ///< VmRSS, bytes
  int64_t resident_peak = 0;  ///< VmHWM, bytes
};

ProcessMemory process_memory();

/// Sets the resident peak to the resident size now (/proc/self/clear_refs, "5"), so that the next
/// process_memory() peak is what came after; false where the kernel does not allow it.
bool reset_resident_peak();

}  // namespace fitscope
