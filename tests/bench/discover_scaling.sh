#!/usr/bin/env bash
# Discover wall time of the four reference CNNs with 1 and 2 local workers
# (3 executors, no skip mode, cache and store ignored), jobs/s, and
# efficiency = (sum of job run times) / (wall time x workers). Each row is
# the fastest of RUNS runs (default 3; a single sub-second run moves by
# 20% with whatever else the 2 cores do).
# Usage: tests/bench/discover_scaling.sh [--runs N] [BUILD_DIR] [MODEL...]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
runs=3
if [ "${1:-}" = "--runs" ]; then runs="$2"; shift 2; fi
build="${1:-$root/build}"; shift || true
shared="${TORQ_SHARED_DIR:-$root/../shared}"
models=("$@"); [ ${#models[@]} -gt 0 ] || models=(squeezenet1.0 mobilenetv2 resnet18 efficientnet_b1)
gen="$build/bin/torq-gen-config"
[ -x "$gen" ] || { echo "bench: $gen not built"; exit 2; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
echo "== discover scaling, $(nproc) cores, fastest of $runs runs per row, $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-16s %7s %6s %8s %8s %8s %7s %9s %8s\n' model workers jobs wall_s jobs_s jobs_ph_s effic effic_ph speedup
for m in "${models[@]}"; do
  base=""
  for w in 1 2; do
    best=""
    for ((r = 0; r < runs; r++)); do
      out="$tmp/$m-$w-$r"
      t0=$(date +%s.%N)
      l=$("$gen" discover --model "$shared/models/$m/model.onnx" --output-dir "$out" --workers "$w" --recompute-cache 2>&1 || true)
      t1=$(date +%s.%N)
      d=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.4f", b-a}')
      if [ -z "$best" ] || awk -v d="$d" -v b="$best" 'BEGIN{exit !(d < b)}'; then best="$d"; log="$l"; bt0="$t0"; bt1="$t1"; fi
      rm -rf "$out"
    done
    t0="$bt0"; t1="$bt1"
    jobs=$(echo "$log" | sed -n 's/^jobs: \([0-9]*\) run.*/\1/p')
    wall=$(echo "$log" | sed -n 's/^wall \([0-9.]*\) s (jobs \([0-9.]*\) s), \([0-9.]*\) jobs\/s, efficiency \([0-9.]*\).*/\1 \2 \3 \4/p')
    read -r total jw rate eff <<< "$wall"
    # The whole command as the user waits for it (process start to exit,
    # workers reaped), not the figure it prints before its last cleanup.
    real=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b-a}')
    eff=$(awk -v e="$eff" -v t="$total" -v r="$real" 'BEGIN{printf "%.2f", e*t/r}')
    total="$real"
    [ -n "$base" ] || base="$total"
    speed=$(awk -v a="$base" -v b="$total" 'BEGIN{printf "%.2f", a/b}')
    # Efficiency over the job phase only (import and report excluded).
    effph=$(awk -v e="$eff" -v t="$total" -v j="$jw" 'BEGIN{printf "%.2f", e*t/j}')
    printf '%-16s %7s %6s %8s %8s %8s %7s %9s %8s\n' "$m" "$w" "$jobs" "$total" "$rate" "$jw" "$eff" "$effph" "$speed"
  done
done
echo "(wall = whole command incl. import, report and worker exit, timed from outside; effic = sum of job times / (wall x workers); effic_ph the same"
echo " over the job phase only; goals: efficiency >= 0.8 at 2 workers, squeezenet1.0 < 10 s)"
