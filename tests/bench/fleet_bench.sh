#!/usr/bin/env bash
# Fleet benchmark (issue 4, Performance): torq-coordinator + torq-worker over
# TCP loopback (127.0.0.1), workers in benchmark mode (--bench-executor: jobs
# answered in-process without the engine), on synthetic models that are
# chains of N Relu layers (3 executors each: 3N jobs), encoded with protoc
# from Debian's onnx.proto.
#   (a) dispatch throughput, noop executor, 1 coordinator + 4 workers with
#       ample capacity: jobs/s and p50/p99 dispatch latency (JOB sent ->
#       RESULT received, recorded by the broker)          goal >= 50000 jobs/s
#   (b) scaling, sleep:20 executor (20 ms per job), 1/4/16 workers of
#       capacity 1: speedup vs 1 worker                   goal >= 0.85 x workers
#   (c) a second run of an unchanged spec: wall time of the whole command vs
#       the first run (sleep:20, 4 workers)               goal >= 20x faster
#       c1: same --db, same spec: the run resumes from the store;
#       c2: same --db, a new run id (another --job-timeout-ms, which is not
#           part of the cache key): every job comes from the content-addressed
#           cache (get_cache before dispatch).
# Figures vary with the machine's load (2 cores shared by the coordinator,
# its workers and anything else running): run it on a quiet machine. In (b)
# the 1-worker baseline pays each job's commit and round trip serially,
# which group commits hide with more workers, so speedups can exceed W.
# Usage: tests/bench/fleet_bench.sh [BUILD_DIR] [LAYERS_A] [LAYERS_B] [LAYERS_C]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/build}"
layers_a="${2:-10000}"   # (a): 3 x this many jobs
layers_b="${3:-128}"     # (b): 3 x this many jobs per worker count
layers_c="${4:-256}"     # (c)
coord="$build/bin/torq-coordinator"
worker="$build/bin/torq-worker"
for b in "$coord" "$worker"; do [ -x "$b" ] || { echo "bench: $b not built"; exit 2; }; done
command -v protoc >/dev/null && [ -f /usr/include/onnx/onnx.proto ] ||
  { echo "bench: needs protoc and /usr/include/onnx/onnx.proto (protobuf-compiler, libonnx-dev)"; exit 2; }
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

. "$root/tests/bench/lib.sh"  # free_port, gen_model N NAME DIR, now

# fleet NAME WORKERS CAPACITY EXECUTOR DB MODEL [COORDINATOR ARGS...]: one run;
# the coordinator's summary goes to $tmp/NAME.out, its wall time to $tmp/NAME.wall.
fleet() {
  local name=$1 nw=$2 cap=$3 exe=$4 db=$5 spec=$6
  shift 6
  local port i t0 t1 rc=0
  port=$(free_port)
  pids=()
  for ((i = 0; i < nw; i++)); do
    "$worker" --connect "tcp://127.0.0.1:$port" --id "$name-w$i" --capacity "$cap" --cache "$tmp/cache-$name-$i" \
      --bench-executor "$exe" 2>"$tmp/$name-w$i.log" &
    pids+=($!)
  done
  t0=$(now)
  local what=(--model "$spec")
  # A matrix spec: the run of issue #5 (its reports go to $tmp/export-NAME).
  if [[ $spec == *.yaml ]]; then what=(--spec "$spec" --export "$tmp/export-$name"); fi
  /usr/bin/time -f "%U %S" -o "$tmp/$name.cpu" "$coord" "${what[@]}" --db "$db" --bind "tcp://127.0.0.1:$port" --min-workers "$nw" "$@" \
    >"$tmp/$name.out" 2>"$tmp/$name.err" || rc=$?
  t1=$(now)
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
  awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b-a}' >"$tmp/$name.wall"
  if [ "$rc" -ne 0 ] || ! grep -Eq ": complete ==|^exit +0$" "$tmp/$name.out"; then
    echo "bench: run $name failed (exit $rc)"; tail -20 "$tmp/$name.err"; exit 1
  fi
}
# Fields of the summary's dispatch line: p50 p99 window_s jobs_per_s result_commits lease_commits.
dispatch_fields() {
  sed -n 's/^dispatch .* p50 \([0-9.]*\) ms, p99 \([0-9.]*\) ms; first JOB to last commit \([0-9.]*\) s, \([0-9.]*\) jobs\/s; store writes: \([0-9]*\) synced result batches, \([0-9]*\) lease batches.*/\1 \2 \3 \4 \5 \6/p' "$tmp/$1.out"
}
fleet_rate() { sed -n 's/^time .* fleet \([0-9.]*\) s, \([0-9.]*\) jobs\/s/\1 \2/p' "$tmp/$1.out"; }
verdict() { awk -v v="$1" -v g="$2" 'BEGIN{print (v >= g) ? "MET" : "NOT MET"}'; }

echo "== fleet bench, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"

# (a) dispatch throughput
gen_model "$layers_a" chain_a "$tmp"
fleet a 4 256 noop "$tmp/db-a" "$tmp/chain_a.onnx"
read -r p50 p99 win rate rc lc <<<"$(dispatch_fields a)"
read -r fsec frate <<<"$(fleet_rate a)"
jobs_a=$((3 * layers_a))
cpu_us=$(awk -v j="$jobs_a" '{printf "%.0f", ($1 + $2) * 1e6 / j}' "$tmp/a.cpu")
sync_ms=$(dd if=/dev/zero of="$tmp/dsync" bs=4k count=200 oflag=dsync 2>&1 |
  sed -n 's/.* copied, \([0-9.]*\) s.*/\1/p' | awk '{printf "%.3f", $1 * 1000 / 200}')
echo "(a) dispatch, noop executor, 4 workers x capacity 256, $jobs_a jobs:"
echo "    $rate jobs/s (first JOB sent to last result committed, $win s); latency JOB->RESULT p50 $p50 ms, p99 $p99 ms"
echo "    whole fleet phase incl. planning and store lookups: $frate jobs/s ($fsec s)"
echo "    limits: coordinator CPU $cpu_us us/job (user+sys, whole command, one thread) on 2 cores shared with"
echo "    the 4 workers; $rc synced result batches + $lc lease batches (not synced) (a synced 4 KiB write here: $sync_ms ms)"
echo "    goal >= 50000 jobs/s: $(verdict "$rate" 50000)"

# (b) scaling with a 20 ms executor
gen_model "$layers_b" chain_b "$tmp"
jobs_b=$((3 * layers_b))
echo "(b) scaling, sleep:20 executor, capacity 1 per worker, $jobs_b jobs (ideal 1 worker: $((jobs_b * 20)) ms):"
base=""
for w in 1 4 16; do
  fleet "b$w" "$w" 1 sleep:20 "$tmp/db-b$w" "$tmp/chain_b.onnx"
  read -r p50 p99 win rate rc lc <<<"$(dispatch_fields "b$w")"
  [ -n "$base" ] || base="$win"
  speed=$(awk -v a="$base" -v b="$win" 'BEGIN{printf "%.2f", a/b}')
  goal=$(awk -v w="$w" 'BEGIN{printf "%.2f", 0.85*w}')
  ideal=$(awk -v j="$jobs_b" -v w="$w" -v t="$win" 'BEGIN{printf "%.2f", j * 0.020 / w / t}')
  echo "    $w workers: $win s, $rate jobs/s, speedup $speed (goal >= $goal: $(verdict "$speed" "$goal")); of ideal $ideal; p50 $p50 ms, p99 $p99 ms"
done

# (c) a second run of an unchanged matrix spec; c2's spec differs only in
# an option outside the cache key (a new run id, served by the cache)
gen_model "$layers_c" chain_c "$tmp"
jobs_c=$((3 * layers_c + 1))  # + the assigned full-model run of the matrix test
# (bench executors compare nothing: the test asserts no pcc)
printf 'test_config:\n  chain_c-fp32-sim-discover: {assert_pcc: false}\n' >"$tmp/chain_c.config.yaml"
spec_c='models: [chain_c.onnx]\nexecutors: [nss, css, host]\ntest_config: [chain_c.config.yaml]\n'
printf "$spec_c" >"$tmp/chain_c.yaml"
printf "${spec_c}options: {job_timeout_ms: 120001}\n" >"$tmp/chain_c2.yaml"
fleet c1st 4 1 sleep:20 "$tmp/db-c" "$tmp/chain_c.yaml"
fleet c2nd 0 1 noop "$tmp/db-c" "$tmp/chain_c.yaml"
fleet c3rd 0 1 noop "$tmp/db-c" "$tmp/chain_c2.yaml"
first=$(cat "$tmp/c1st.wall"); second=$(cat "$tmp/c2nd.wall"); third=$(cat "$tmp/c3rd.wall")
r2=$(awk -v a="$first" -v b="$second" 'BEGIN{printf "%.1f", a/b}')
r3=$(awk -v a="$first" -v b="$third" 'BEGIN{printf "%.1f", a/b}')
echo "(c) unchanged spec, $jobs_c jobs; first run sleep:20 on 4 workers: $first s (whole command)"
echo "    c1 rerun, same run (resumed from the store): $second s, $r2 x faster; $(sed -n 's/^jobs *//p' "$tmp/c2nd.out")"
echo "    c2 new run id, content-addressed cache: $third s, $r3 x faster; $(sed -n 's/^jobs *//p' "$tmp/c3rd.out")"
echo "    goal >= 20x: c1 $(verdict "$r2" 20), c2 $(verdict "$r3" 20)"
