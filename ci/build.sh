#!/usr/bin/env bash
# Configures and builds torq-farm (Release by default, -j2, ccache if present).
# Usage: ci/build.sh [BUILD_DIR] [extra cmake args...]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${1:-build}"
shift || true
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" "$@"
cmake --build "$BUILD_DIR" -j"${JOBS:-2}"
