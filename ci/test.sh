#!/usr/bin/env bash
# Sets up, builds and runs every test with ctest: unit tests, the ONNX
# backend conformance run, CLI tests, and (when ../shared is beside the
# checkout) the reference-model tests.
set -euo pipefail
cd "$(dirname "$0")/.."
ci/install-deps.sh
ci/build.sh build
cd build
ctest --output-on-failure -j"${JOBS:-2}" "$@"
