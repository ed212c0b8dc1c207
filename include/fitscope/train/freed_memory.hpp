#pragma once
/// keep_freed_memory: has the C library's allocator keep the memory a training step frees for the
/// next step, instead of handing it back to the kernel and faulting it in again, zeroed, page by page.
///
/// glibc's malloc returns a freed block above its mmap threshold with munmap and trims the heap's top
/// above its trim threshold; both thresholds move with the program's history of frees (the mmap
/// threshold is dynamic), so whether a step's tensors are faulted in anew every step depends on the
/// order of all earlier allocations. Measured (bench/freed_memory.sh): the seed CNN's CPU step took
/// 4 ms or 34 ms, ~1,500 page faults a step more, depending only on the length of the run directory's
/// name. Fixed thresholds (blocks up to 32 MiB from the heap, the heap's top never trimmed) make it the
/// fast one in every layout; the cost is that the process keeps its peak heap until it ends, which a
/// training process reaches again every step anyway.
///
/// Process-wide and idempotent; TrainerOptions::keep_freed_memory (on by default) calls it when a fit
/// starts. Returns false where the C library is not glibc (nothing is changed). Thread-safe.

namespace fitscope {

bool keep_freed_memory();

}  // namespace fitscope
