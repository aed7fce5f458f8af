// The process's own memory (its peak RSS, giving freed pages back) and CPU.
#pragma once

#include <cstddef>

namespace torq::base {

// Peak RSS of this process so far, in MiB (0 when getrusage fails).
double peak_rss_mb();
// RSS of this process now, in MiB (0 when /proc/self/statm is unreadable).
double current_rss_mb();

// What the program's allocations hold now, in MiB: the allocator's
// allocated bytes (tcmalloc's generic.current_allocated_bytes, or glibc's
// mallinfo2), without its free pages or their fragmentation.
double heap_in_use_mb();

// Gives the allocator's free pages back to the system: tcmalloc's
// (MallocExtension_ReleaseFreeMemory, when the program links it: the
// coordinators) or glibc's (malloc_trim). Before a phase that allocates
// afresh, so that the peak RSS is not the sum of the phases.
void release_free_memory();

// Caps what tcmalloc's per-thread caches of freed objects hold in all
// (tcmalloc.max_total_thread_cache_bytes; its default, 32 MiB, filled over
// a long run: a coordinator's memory grew with the length of its spec,
// issue 32). Does nothing in a program without tcmalloc.
void limit_thread_caches(size_t bytes);

// What tcmalloc's thread caches hold now, and their limit, in MiB (0 and 0
// in a program without tcmalloc).
double thread_cache_mb();
double thread_cache_limit_mb();

// CPU seconds (user + system) this process has used so far, every thread's
// (`children` false), or those of its child processes that have exited and
// been waited for (`children` true). 0 when getrusage fails.
double cpu_seconds(bool children);

}  // namespace torq::base
