#!/usr/bin/env bash
# The fast tests under AddressSanitizer + UndefinedBehaviorSanitizer: a
# second build (build-asan, RelWithDebInfo, -DTORQ_SANITIZE=ON) and ctest on
# the unit, fleet, matrix, integration and CLI labels (the shared-model runs
# are left out: slow under ASan, same code paths). Any sanitizer report
# stops the process that hit it, so its test fails.
# Not part of ci/test.sh: a cold sanitizer build takes ~13 min on 2 cores.
# Usage: ci/sanitize.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
ci/install-deps.sh
BUILD_DIR=${1:-build-asan}
BUILD_TYPE=RelWithDebInfo ci/build.sh "$BUILD_DIR" -DTORQ_SANITIZE=ON
cd "$BUILD_DIR"
export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ctest --output-on-failure -j"${JOBS:-2}" -L "unit|fleet|matrix|integration|cli" -E "FleetShared|Nightly|Push"
