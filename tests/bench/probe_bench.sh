#!/usr/bin/env bash
# The probe's figures (issue 34), each measured in this run:
#  1. the default spec (configs/probe/default.yaml) on nss, css and host
#     with 2 and with 1 local workers, from scratch (fresh directory and
#     store): points (refinement rounds included), jobs, wall time, jobs/s;
#     beside it, as the peer measured on the same machine in the same run,
#     discover of resnet18 (the same job machinery on a model's layers) with
#     2 workers: the probe's jobs/s over discover's says what one unit per
#     single-op model costs;
#  2. inference quality: tests/probe/check_hidden_profile.sh on the shared
#     models and, when built (ci/make-zoo.sh), the 16 zoo models, bf16 and
#     int8: the agreement of the derived profile with the hidden one.
# Usage: tests/bench/probe_bench.sh [BUILD_DIR]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/build}"
shared="${TORQ_SHARED_DIR:-$root/../shared}"
gen="$build/bin/torq-gen-config"
[ -x "$gen" ] || { echo "bench: $gen not built"; exit 2; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
echo "== probe bench, $(nproc) cores, $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
probe() {  # WORKERS -> one line of figures
  local w=$1 out="$tmp/probe-$1" t0 t1 log
  t0=$(date +%s.%N)
  log=$("$gen" probe --spec "$root/configs/probe/default.yaml" -o "$out" -j "$w" | grep -v '^\[probe\] jobs')
  t1=$(date +%s.%N)
  local points jobs js
  points=$(sed -n 's/^probe: \([0-9]*\) points (.*/\1/p' <<< "$log")
  jobs=$(sed -n 's/^jobs: \([0-9]*\) run.*/\1/p' <<< "$log")
  js=$(awk -v j="$jobs" -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", j / (b - a)}')
  printf 'probe    workers %d  points %5d  jobs %6d  wall %6.2f s  %7s jobs/s (wall)  | %s\n' "$w" "$points" "$jobs" \
      "$(echo "$t1 - $t0" | bc)" "$js" "$(grep -E '^wall ' <<< "$log")"
  sed -n 's/^wall .* s), \([0-9.]*\) jobs\/s on.*/\1/p' <<< "$log" > "$tmp/jph-$w"
  grep -E '^envelope ' <<< "$log" | sed 's/^/         /'
}
probe 2
probe 1
t0=$(date +%s.%N)
dlog=$("$gen" discover --model "$shared/models/resnet18/model.onnx" -o "$tmp/disc" --auto-convert-bf16 --workers 2 |
      grep -E '^(jobs:|wall )' || true)
t1=$(date +%s.%N)
djobs=$(sed -n 's/^jobs: \([0-9]*\) run.*/\1/p' <<< "$dlog")
[ -n "$djobs" ] || { echo "bench: discover of resnet18 printed no jobs line"; exit 2; }
# Job-phase rates (first job to last result): the import of one model and
# of 5,000 small ones are not what is compared.
djs=$(sed -n 's/^wall [0-9.]* s (jobs \([0-9.]*\) s).*/\1/p' <<< "$dlog" | awk -v j="$djobs" '{printf "%.1f", j / $1}')
printf 'discover resnet18 bf16, 2 workers: %d jobs, %s jobs/s in its job phase | %s\n' "$djobs" "$djs" \
    "$(grep -E '^wall ' <<< "$dlog")"
awk -v p="$(cat "$tmp/jph-2")" -v d="$djs" -v q="$(cat "$tmp/jph-1")" \
  'BEGIN{printf "ratio (job phase): probe / discover = %.2f at 2 workers; probe 2 workers / 1 worker = %.2f\n", p / d, p / q}'
models=()
for m in "$shared"/models/*/model.onnx; do models+=("$m" "$m:int8"); done
zoo=0
for m in "$root"/build/zoo/*/model.onnx; do [ -f "$m" ] && { models+=("$m" "$m:int8"); zoo=$((zoo + 1)); }; done
echo "hidden profile: ${#models[@]} model variants ($zoo zoo models$([ "$zoo" = 0 ] && echo ': not built, ci/make-zoo.sh'))"
"$root/tests/probe/check_hidden_profile.sh" "$gen" "$tmp/hidden" 0.99 "${models[@]}" | grep -vE '^\[progress\]|built [0-9]+/' | tail -n +2
