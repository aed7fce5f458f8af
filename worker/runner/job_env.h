// The environment a job process starts in (LocalPool): this process's,
// with glibc's allocator set up for layer jobs.
//
// A job process's lanes allocate and free a layer's sub-model, inputs and
// outputs per job (megabytes each). With glibc's defaults every lane
// thread gets its own arena, whose 64 MB heaps are grown page by page with
// mprotect and deleted whole when they empty, so a lane faulted in its
// memory again and again: on an efficientnet_b1 discover, 45,000 page
// faults in the one lane and a third of its time in the kernel. One arena
// (the main, brk heap, which worker_main keeps from being trimmed) backed
// by transparent huge pages takes the lane to under 1,000 faults and the
// whole discover from 0.50 to 0.38 s (tests/bench/discover_scaling.sh).
//
// Those are glibc tunables, read once at process start, so the parent
// sets them: GLIBC_TUNABLES gains glibc.malloc.arena_max=1 and
// glibc.malloc.hugetlb=1 (madvise: huge pages where the kernel's
// transparent_hugepage setting is "madvise" or "always"; ignored by glibc
// before 2.35). A tunable the user's own GLIBC_TUNABLES sets stays as set.
// They are the job process's alone: the caller's value travels along in
// TORQ_CALLER_GLIBC_TUNABLES and the job process puts it back at start
// (restore_caller_tunables), so the tools it runs (a toolchain's compiler,
// many threads, and ssh) start as the caller would have started them.
#pragma once

#include <string>
#include <vector>

namespace torq::runner {

// The tunables a job process gets unless GLIBC_TUNABLES already names them.
inline constexpr const char* kJobMallocTunables[] = {"glibc.malloc.arena_max=1", "glibc.malloc.hugetlb=1"};

// `value` (a GLIBC_TUNABLES value: name=value pairs joined by ':'; empty
// when unset) with each of kJobMallocTunables it does not set appended.
std::string job_tunables(const std::string& value);

// Carries the caller's GLIBC_TUNABLES (empty: it had none) to the job process.
inline constexpr const char kCallerTunablesVar[] = "TORQ_CALLER_GLIBC_TUNABLES";

// `env` (a NULL-terminated environ array) with GLIBC_TUNABLES replaced by
// job_tunables() of it (added when absent) and kCallerTunablesVar set to
// its value; the rest as it is, in order.
std::vector<std::string> job_environment(char* const* env);

// In a job process: GLIBC_TUNABLES back to the caller's (unset when it had
// none) when kCallerTunablesVar says what it was, and kCallerTunablesVar
// removed. glibc has read the tunables by then; only children see this.
void restore_caller_tunables();

}  // namespace torq::runner
