#!/usr/bin/env bash
# Discover wall time of the four reference CNNs with 1 and 2 local workers
# (3 executors, no skip mode, cache and store ignored), jobs/s, and
# efficiency = (sum of job run times) / (wall time x workers), and the CPU
# the whole command used (user + sys of it and its workers). Each row is
# the fastest of RUNS runs (default 3; a single sub-second run moves by
# 20% with whatever else the 2 cores do), with the median beside it; the
# runs alternate 1 and 2 workers (1 2, 2 1, ...), so a slow spell falls on
# both. max_sp, at 2 workers: the most
# any schedule could give over the 1-worker wall with that much CPU on
# this machine's cores, wall_1 / (cpu_2 / cores).
# Usage: tests/bench/discover_scaling.sh [--runs N] [BUILD_DIR] [MODEL...]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
runs=3
if [ "${1:-}" = "--runs" ]; then runs="$2"; shift 2; fi
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || { echo "bench: --runs takes a count >= 1, not '$runs'"; exit 2; }
build="${1:-$root/build}"; shift || true
shared="${TORQ_SHARED_DIR:-$root/../shared}"
models=("$@"); [ ${#models[@]} -gt 0 ] || models=(squeezenet1.0 mobilenetv2 resnet18 efficientnet_b1)
gen="$build/bin/torq-gen-config"
[ -x "$gen" ] || { echo "bench: $gen not built"; exit 2; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
echo "== discover scaling, $(nproc) cores, fastest of $runs runs per row, $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-16s %7s %6s %8s %8s %8s %8s %7s %9s %8s %7s %6s %7s %7s\n' model workers jobs wall_s wall_med jobs_s jobs_ph_s effic effic_ph speedup sp_med cpu_s max_sp amd_sp
TIMEFORMAT='%3U %3S'
# One discover: its wall time from outside, and its log and CPU times.
discover() {  # MODEL WORKERS OUT -> sets d, l, tm
  local t0 t1
  t0=$(date +%s.%N)
  tm=$( { time "$gen" discover --model "$shared/models/$1/model.onnx" --output-dir "$3" --workers "$2" \
            --recompute-cache > "$tmp/log" 2>&1 || true; } 2>&1)
  t1=$(date +%s.%N)
  l=$(cat "$tmp/log")
  d=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.4f", b-a}')
  rm -rf "$3"
}
median() { sort -n | awk '{v[NR]=$1} END{printf "%.3f", NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
for m in "${models[@]}"; do
  # The two worker counts alternate run by run, so a slow spell of the
  # machine (this VM has them) falls on both alike.
  declare -A best=() log=() btm=() walls=()
  for ((r = 0; r < runs; r++)); do
    order="1 2"; ((r % 2 == 0)) || order="2 1"  # neither count always goes first
    for w in $order; do
      discover "$m" "$w" "$tmp/$m-$w-$r"
      walls[$w]+="$d "
      if [ -z "${best[$w]:-}" ] || awk -v d="$d" -v b="${best[$w]}" 'BEGIN{exit !(d < b)}'; then
        best[$w]="$d"; log[$w]="$l"; btm[$w]="$tm"
      fi
    done
  done
  base=""; base_med=""; base_jw=""
  for w in 1 2; do
    med=$(printf '%s\n' ${walls[$w]} | median)
    log_w="${log[$w]}"
    jobs=$(echo "$log_w" | sed -n 's/^jobs: \([0-9]*\) run.*/\1/p')
    wall=$(echo "$log_w" | sed -n 's/^wall \([0-9.]*\) s (jobs \([0-9.]*\) s), \([0-9.]*\) jobs\/s, efficiency \([0-9.]*\).*/\1 \2 \3 \4/p')
    read -r total jw rate eff <<< "$wall"
    # The whole command as the user waits for it (process start to exit,
    # workers reaped), not the figure it prints before its last cleanup.
    real=$(awk -v d="${best[$w]}" 'BEGIN{printf "%.3f", d}')
    eff=$(awk -v e="$eff" -v t="$total" -v r="$real" 'BEGIN{printf "%.2f", e*t/r}')
    total="$real"
    [ -n "$base" ] || { base="$total"; base_med="$med"; base_jw="$jw"; }
    speed=$(awk -v a="$base" -v b="$total" 'BEGIN{printf "%.2f", a/b}')
    speed_med=$(awk -v a="$base_med" -v b="$med" 'BEGIN{printf "%.2f", a/b}')
    # Efficiency over the job phase only (import and report excluded).
    effph=$(awk -v e="$eff" -v t="$total" -v j="$jw" 'BEGIN{printf "%.2f", e*t/j}')
    cpu=$(echo "${btm[$w]}" | awk '{printf "%.2f", $1 + $2}')
    maxsp=-; amdsp=-
    [ "$w" = 1 ] || maxsp=$(awk -v a="$base" -v c="$cpu" -v n="$(nproc)" 'BEGIN{printf "%.2f", a / (c / n)}')
    # Amdahl: this run's serial part (wall outside its job phase) with the
    # 1-worker job phase cut by exactly the worker count.
    [ "$w" = 1 ] || amdsp=$(awk -v a="$base" -v t="$total" -v j="$jw" -v j1="$base_jw" -v w="$w" \
                              'BEGIN{printf "%.2f", a / (t - j + j1 / w)}')
    printf '%-16s %7s %6s %8s %8s %8s %8s %7s %9s %8s %7s %6s %7s %7s\n' "$m" "$w" "$jobs" "$total" "$med" "$rate" "$jw" "$eff" "$effph" "$speed" "$speed_med" "$cpu" "$maxsp" "$amdsp"
  done
  unset best log btm walls
done
echo "(wall = whole command incl. import, report and worker exit, timed from outside, fastest run; wall_med = median run; sp_med = speedup of the medians; runs alternate 1 and 2 workers; effic = sum of job times / (wall x workers); effic_ph the same"
echo " over the job phase only; cpu_s = user + sys of the command and its workers; max_sp = wall at 1 worker / (cpu_s / $(nproc) cores),"
echo " the speedup no schedule of that much CPU could beat; amd_sp = wall at 1 worker / (this run's wall outside its job phase + the 1-worker job"
echo " phase / workers), the speedup a job phase that scaled perfectly would give with this run's serial part;"
echo " goals: efficiency >= 0.8 at 2 workers, squeezenet1.0 < 10 s)"
