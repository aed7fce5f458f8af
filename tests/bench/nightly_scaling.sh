#!/usr/bin/env bash
# The nightly with 1 and then 2 local workers (ci/nightly.sh, fresh output
# directory and store each: no resume, no cache), and what issue 32 asks of
# it: the job phase (first job sent to last result committed) and the whole
# run's wall time at each worker count, their speedups from 1 to 2
# workers, when the first job went out, wall / job phase (how long the
# workers were without work), and the coordinator's peak RSS, all read from
# the coordinator's own summary ("phases" line), and the machine's cores
# busy on average over the run (/proc/stat: every process on the machine,
# the nightly's and any other load); then the bound that the
# coordinator side's CPU (its "cpu" line) puts on that speedup on 2 cores,
# and where its own CPU went with 2 workers (its "threads" line).
# About 2 x 3 min on 2 cores for the zoo nightly (after ci/make-zoo.sh);
# give a smaller SPEC or a -k to try it quicker.
# Usage: tests/bench/nightly_scaling.sh [BUILD_DIR] [SPEC] [-- extra torq-coordinator args]
#   env: PRESET (ci/nightly.sh's, default nightly), WORKER_ARGS (ci/nightly.sh's)
#        JOB_SLEEP_MS=N: the workers answer each job after N ms without
#          computing it (torq-worker --bench-executor sleep:N), as workers on
#          cores of their own would; the coordinator's side is all real
#          (preparation, int8 quantization, planning, dispatch, commit,
#          export), so the speedup then says whether the coordinator keeps
#          twice the workers busy. The outcomes are not real (every job is a
#          success), so the coordinator exits 1 (unexpected outcomes).
#          N = the 1-worker job phase / jobs of a real run (~2.5 ms) keeps
#          the jobs' rate.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"; shift || true
spec="${1:-$root/configs/nightly.yaml}"; shift || true
[ "${1:-}" = "--" ] && shift
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
sleep_ms="${JOB_SLEEP_MS:-}"
if [ -n "$sleep_ms" ]; then
  [[ $sleep_ms =~ ^[0-9]+$ ]] || { echo "bench: JOB_SLEEP_MS '$sleep_ms' is not a whole number of ms"; exit 2; }
  export WORKER_ARGS="${WORKER_ARGS:-} --bench-executor sleep:$sleep_ms"
fi
echo "== nightly scaling: $spec, $(nproc) cores, $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
[ -z "$sleep_ms" ] || echo "workers: every job a ${sleep_ms} ms sleep (--bench-executor; no CPU, outcomes not real): the coordinator's side alone on the cores"
[ -z "${WORKER_ARGS:-}" ] || echo "worker args: $WORKER_ARGS"
declare -A wall job first rss cpu threads
# The machine's busy and total CPU ticks so far (/proc/stat, all cores).
ticks() { awk '/^cpu /{print $2 + $3 + $4 + $7 + $8 + $9, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9; exit}' /proc/stat; }
for w in 1 2; do
  out="$tmp/w$w"
  rc=0
  read -r busy0 total0 <<<"$(ticks)"
  BUILD_DIR="$build" WORKERS=$w "$root/ci/nightly.sh" "$out" "$spec" -- "$@" > "$tmp/w$w.log" 2>&1 || rc=$?
  read -r busy1 total1 <<<"$(ticks)"
  line=$(grep -E '^phases ' "$tmp/w$w.log" || true)
  if [ -z "$line" ]; then
    echo "bench: the nightly with $w workers printed no phases line (exit $rc):"; tail -20 "$tmp/w$w.log"; exit 1
  fi
  # phases    N units prepared by P s, first job sent at F s, job phase J s, wall W s; coordinator peak RSS M MB
  first[$w]=$(sed -E 's/.*first job sent at ([0-9.]+) s.*/\1/' <<<"$line")
  job[$w]=$(sed -E 's/.*job phase ([0-9.]+) s.*/\1/' <<<"$line")
  wall[$w]=$(sed -E 's/.*, wall ([0-9.]+) s.*/\1/' <<<"$line")
  rss[$w]=$(sed -E 's/.*peak RSS ([0-9]+) MB.*/\1/' <<<"$line")
  # cpu       coordinator C s, its child processes (...) K s, over a wall of W s
  cline=$(grep -E '^cpu +coordinator ' "$tmp/w$w.log" || true)
  cpu[$w]=$(sed -E 's/^cpu +coordinator ([0-9.]+) s, its child processes \([^)]*\) ([0-9.]+) s.*/\1 \2/' <<<"$cline")
  # threads   main A s, torq-prepare B s, ..., others R s (the coordinator's CPU by thread)
  threads[$w]=$(grep -E '^threads +' "$tmp/w$w.log" | sed -E 's/^threads +//; s/ \(the coordinator.s CPU by thread\)$//' || true)
  jobs=$(grep -E '^jobs ' "$tmp/w$w.log" | awk '{print $2}')
  awk -v w="$w" -v n="$jobs" -v f="${first[$w]}" -v j="${job[$w]}" -v t="${wall[$w]}" -v r="${rss[$w]}" -v rc="$rc" \
      -v b=$((busy1 - busy0)) -v a=$((total1 - total0)) -v c="$(nproc)" 'BEGIN{
    printf "nightly: workers %d, jobs %s, first job %.2f s, job phase %.1f s, wall %.1f s, wall/job phase %.2f, peak RSS %d MB, cores busy %.2f of %d (exit %d)\n",
      w, n, f, j, t, (j > 0 ? t / j : 0), r, (a > 0 ? c * b / a : 0), c, rc }'
done
awk -v j1="${job[1]}" -v j2="${job[2]}" -v w1="${wall[1]}" -v w2="${wall[2]}" 'BEGIN{
  printf "scaling: job-phase speedup 1->2 workers %.2f (goal 1.8), whole-nightly speedup %.2f (goal 1.6)\n", j1 / j2, w1 / w2 }'
# What the coordinator's side (its threads and its tools: int8 quantization)
# leaves the workers of a 2-core machine: 2 workers and it share 2 x T2 s
# of CPU, so T2 >= (W + C) / 2 for workers' CPU W; taking W as the 1-worker
# job phase T1 (one worker busy throughout, an upper estimate), the
# speedup T1 / T2 is at most 2 T1 / (T1 + C).
read -r c_own c_kids <<<"${cpu[2]:-}"
if [[ ${c_own:-} =~ ^[0-9.]+$ && ${c_kids:-} =~ ^[0-9.]+$ ]]; then
  if [ -n "$sleep_ms" ]; then
    awk -v j2="${job[2]}" -v a="$c_own" -v b="$c_kids" 'BEGIN{
      printf "coordinator: %.1f s of CPU with 2 workers (its threads %.1f s, its tools %.1f s) over a %.1f s job phase; the workers used none\n", a + b, a, b, j2 }'
  else
    awk -v j1="${job[1]}" -v a="$c_own" -v b="$c_kids" 'BEGIN{ c = a + b
      printf "bound: the coordinator side used %.1f s of CPU with 2 workers (its threads %.1f s, its tools %.1f s); on %d cores the job-phase speedup is at most 2 x T1 / (T1 + C) = %.2f\n", c, a, b, 2, 2 * j1 / (j1 + c) }'
  fi
  echo "       its threads with 2 workers: ${threads[2]:-(no threads line)}"
else
  echo "bound: no cpu line in the 2-worker summary"
fi
echo "== end $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
