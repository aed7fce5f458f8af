#!/usr/bin/env bash
# Coordinator memory against the number of models (issue 32: flat within
# 20% from 16 to 160 models). Makes N1 and N2 distinct models from the
# zoo's smaller architectures (each copy differs in its doc_string, so no
# two share a unit or a store key), runs a spec of them (fp32 and bf16,
# discover and run, sim target) over 2 local workers from a fresh store
# each time, and prints the coordinator's own peak RSS per size from its
# `phases` line:
#
#   memory: models N1 peak RSS A MB (J1 jobs), models N2 peak RSS B MB (J2 jobs), growth B/A X (goal <= 1.20)
#
# Usage: tests/bench/memory_flat.sh [BUILD_DIR] [N1] [N2]   (default build 16 160)
# Needs the zoo (ci/make-zoo.sh build/zoo). TORQ_BENCH_KEEP=1 keeps the work directory.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build}
N1=${2:-16}
N2=${3:-160}
BIN=$BUILD/bin
for b in torq-coordinator torq-worker; do
  [ -x "$BIN/$b" ] || { echo "memory_flat: $BIN/$b missing: build first" >&2; exit 2; }
done
BASES=(squeezenet1_1 shufflenet_v2_x1_0 mobilenet_v2 regnet_y_400mf efficientnet_b0 mobilenet_v3_large googlenet efficientnet_b1)
for m in "${BASES[@]}"; do
  [ -f "$BUILD/zoo/$m/model.onnx" ] || { echo "memory_flat: $BUILD/zoo/$m/model.onnx missing: ci/make-zoo.sh $BUILD/zoo" >&2; exit 2; }
done
WORK=$(mktemp -d /tmp/torq-memory-flat.XXXXXX)
cleanup() { [ "${TORQ_BENCH_KEEP:-}" = 1 ] && echo "memory_flat: kept $WORK" >&2 || rm -rf "$WORK"; }
trap cleanup EXIT

# make_models N DIR: N models, the bases in turn, each with its own doc_string
# (a protobuf field 6 appended to the file: the last one is the model's).
make_models() {
  local n=$1 dir=$2 i base tag
  mkdir -p "$dir"
  for ((i = 0; i < n; i++)); do
    base=${BASES[$((i % ${#BASES[@]}))]}
    tag=$(printf 'copy-%05d' "$i")
    cp "$BUILD/zoo/$base/model.onnx" "$dir/${base}_$i.onnx"
    printf '\x32\x0a%s' "$tag" >>"$dir/${base}_$i.onnx"
  done
}

# run_size N: the spec over N models; prints "PEAK_MB JOBS".
run_size() {
  local n=$1 dir=$WORK/n$1
  make_models "$n" "$dir/models"
  cat >"$dir/spec.yaml" <<YAML
models:
  - models/*.onnx
variants: [fp32, bf16]
executors: [nss, css, host]
targets:
  sim: {}
modes: [discover, run]
options:
  job_timeout_ms: 120000
YAML
  "$BIN/torq-coordinator" --spec "$dir/spec.yaml" --local-workers 2 --db "$dir/store" --export "$dir/out" \
    >"$dir/summary.txt" 2>"$dir/coordinator.log" || true
  local peak jobs
  peak=$(sed -n 's/.*coordinator peak RSS \([0-9]*\) MB.*/\1/p' "$dir/summary.txt" | tail -1)
  jobs=$(sed -n 's/^jobs *\([0-9]*\) finished.*/\1/p' "$dir/summary.txt")
  [ -n "$peak" ] || { echo "memory_flat: no phases line for $n models; see $dir" >&2; TORQ_BENCH_KEEP=1; exit 1; }
  echo "$peak ${jobs:-?}"
  rm -rf "$dir/models" "$dir/store"
}

echo "== memory bench, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
read -r P1 J1 < <(run_size "$N1")
read -r P2 J2 < <(run_size "$N2")
G=$(python3 -c "print(f'{$P2 / $P1:.2f}')")
echo "memory: models $N1 peak RSS $P1 MB ($J1 jobs), models $N2 peak RSS $P2 MB ($J2 jobs), growth $G (goal <= 1.20)"
