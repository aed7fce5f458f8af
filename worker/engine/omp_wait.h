// The OpenMP wait policy of a program that runs the engine.
//
// libgomp's idle threads spin (OMP_WAIT_POLICY unset: ~300,000 spins) before
// they sleep. The engine runs one short parallel region after another, so on
// a machine with more runnable threads than cores (this project's 2-core
// machines, shared with other jobs) a spinning idle thread takes the core the
// thread with the next op's work needs, and every hand-off waits for the
// scheduler: mobilenet_v3_small took ~90 ms instead of 3 ms, vit_b_16 2.3 s
// instead of 0.55 s (tests/bench/engine_vs_ort.sh). With PASSIVE, idle
// threads sleep at once; on a quiet machine that costs a futex wake per
// region, which the figures show is far less than what spinning loses.
//
// libgomp reads its environment in its own ELF constructor, before any code
// of the program runs, so the default is set from .preinit_array (run before
// every shared library's constructors; executables only). A policy the user
// set (OMP_WAIT_POLICY or GOMP_SPINCOUNT) is kept.
//
// Use: TORQ_ENGINE_OMP_PASSIVE_WAIT() once at namespace scope in the main
// file of an executable that runs sessions.
#pragma once

#include <cstdlib>

namespace torq::engine {

inline void default_omp_wait_policy(int, char**, char**) {
  if (!std::getenv("OMP_WAIT_POLICY") && !std::getenv("GOMP_SPINCOUNT")) setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
}

}  // namespace torq::engine

#define TORQ_ENGINE_OMP_PASSIVE_WAIT()                                                       \
  __attribute__((section(".preinit_array"), used)) static void (*const torq_omp_wait_preinit)( \
      int, char**, char**) = &torq::engine::default_omp_wait_policy
