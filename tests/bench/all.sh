#!/usr/bin/env bash
# Every figure of issue 14 in one run, one after the other on a quiet
# machine: the engine against ONNX Runtime (fp32 and bf16, 14 models), the
# fleet's dispatch, scaling and cache (fleet_bench.sh), and discover with 1
# and 2 workers (discover_scaling.sh), each with the load at its start, and
# the load at the end. About 5 minutes on 2 cores once the torchvision
# models are exported (engine_vs_ort.sh does that the first time).
# Needs ci/install-deps.sh --bench.
# Usage: tests/bench/all.sh [BUILD_DIR]   (ROUNDS, RUNS: engine_vs_ort's)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:-$here/../../build}"
echo "=== tests/bench/all.sh, $(nproc) cores, $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
rc=0
"$here/engine_vs_ort.sh" --rounds "${ROUNDS:-2}" "$build" "${RUNS:-20}" || rc=1
echo
"$here/fleet_bench.sh" "$build" || rc=1
echo
"$here/discover_scaling.sh" --runs 5 "$build" efficientnet_b1 mobilenetv2 || rc=1
echo
echo "=== end $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)$([ "$rc" = 0 ] || echo ', a bench failed: see above')"
exit "$rc"
