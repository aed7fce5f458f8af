#!/usr/bin/env bash
# The nightly with 1 and then 2 local workers (ci/nightly.sh, fresh output
# directory and store each: no resume, no cache), and what issue 32 asks of
# it: the job phase (first job sent to last result committed) and the whole
# run's wall time at each worker count, their speedups from 1 to 2
# workers, when the first job went out, wall / job phase (how long the
# workers were without work), and the coordinator's peak RSS, all read from
# the coordinator's own summary ("phases" line). About 2 x 7 min on 2 cores
# for the zoo nightly (after ci/make-zoo.sh); give a smaller SPEC or a -k
# to try it quicker.
# Usage: tests/bench/nightly_scaling.sh [BUILD_DIR] [SPEC] [-- extra torq-coordinator args]
#   env: PRESET (ci/nightly.sh's, default nightly)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"; shift || true
spec="${1:-$root/configs/nightly.yaml}"; shift || true
[ "${1:-}" = "--" ] && shift
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
echo "== nightly scaling: $spec, $(nproc) cores, $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A wall job first rss
for w in 1 2; do
  out="$tmp/w$w"
  rc=0
  BUILD_DIR="$build" WORKERS=$w "$root/ci/nightly.sh" "$out" "$spec" -- "$@" > "$tmp/w$w.log" 2>&1 || rc=$?
  line=$(grep -E '^phases ' "$tmp/w$w.log" || true)
  if [ -z "$line" ]; then
    echo "bench: the nightly with $w workers printed no phases line (exit $rc):"; tail -20 "$tmp/w$w.log"; exit 1
  fi
  # phases    N units prepared by P s, first job sent at F s, job phase J s, wall W s; coordinator peak RSS M MB
  first[$w]=$(sed -E 's/.*first job sent at ([0-9.]+) s.*/\1/' <<<"$line")
  job[$w]=$(sed -E 's/.*job phase ([0-9.]+) s.*/\1/' <<<"$line")
  wall[$w]=$(sed -E 's/.*, wall ([0-9.]+) s.*/\1/' <<<"$line")
  rss[$w]=$(sed -E 's/.*peak RSS ([0-9]+) MB.*/\1/' <<<"$line")
  jobs=$(grep -E '^jobs ' "$tmp/w$w.log" | awk '{print $2}')
  awk -v w="$w" -v n="$jobs" -v f="${first[$w]}" -v j="${job[$w]}" -v t="${wall[$w]}" -v r="${rss[$w]}" -v rc="$rc" 'BEGIN{
    printf "nightly: workers %d, jobs %s, first job %.2f s, job phase %.1f s, wall %.1f s, wall/job phase %.2f, peak RSS %d MB (exit %d)\n",
      w, n, f, j, t, (j > 0 ? t / j : 0), r, rc }'
done
awk -v j1="${job[1]}" -v j2="${job[2]}" -v w1="${wall[1]}" -v w2="${wall[2]}" 'BEGIN{
  printf "scaling: job-phase speedup 1->2 workers %.2f (goal 1.8), whole-nightly speedup %.2f (goal 1.6)\n", j1 / j2, w1 / w2 }'
echo "== end $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
