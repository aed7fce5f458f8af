#!/usr/bin/env bash
# A million jobs (issue 32): torq-coordinator serves a chain of LAYERS Relu
# layers (3 executors each: 3 x 333,334 = 1,000,002 jobs by default) to W
# torq-workers in benchmark mode (--bench-executor noop: answered in-process,
# no engine) over TCP loopback, is killed with SIGKILL half-way, and is
# started again with the same --db; the workers stay up and reconnect, as on
# a farm whose coordinator host rebooted.
#
# Counted, not taken from the coordinator's own summary:
#   done at the kill  jobs in state D in the store right after the SIGKILL,
#                     read by RocksDB's ldb (rocksdb-tools) as a secondary
#                     instance (the killed store is not touched);
#   lost              jobs of the model without a result in the final
#                     report JSON (distinct job ids in it, against N);
#   duplicated        jobs a worker ran more than once (the workers log
#                     every job they finish, -v), over both runs: a job done
#                     before the kill and run again after it, or a lease run
#                     twice;
#   resume            the restarted coordinator's "first job sent at" (its
#                     own clock from its start: store scan, import, planning);
#   export            the restarted coordinator's report export (its
#                     `phases` line): the report and compiler JSON of the
#                     model, written as the store is read;
#   peak RSS          the larger of the killed coordinator's VmHWM, read
#                     just before the kill, and the restarted one's own;
#   wall              first start to the end of the second run, kill and
#                     restart included.
# Prints: million: jobs N, wall S s, peak RSS M MB, resume R s, lost L,
# duplicated D, export E s
# Goals: peak RSS <= 1024 MB, resume <= 10 s, lost 0, duplicated 0, export <= 60 s.
# Needs protoc, /usr/include/onnx/onnx.proto and ldb (ci/install-deps.sh --bench).
# About 3 minutes on 2 cores; 64 workers take about 1.5 GB of RAM.
# Usage: tests/bench/scale_bench.sh [BUILD_DIR] [LAYERS=333334] [WORKERS=64] [CAPACITY=16]
# (TORQ_BENCH_KEEP=1 keeps the logs, reports and store in the temporary directory.)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/build}"
layers="${2:-333334}"
nw="${3:-64}"
cap="${4:-16}"
coord="$build/bin/torq-coordinator"
worker="$build/bin/torq-worker"
for b in "$coord" "$worker"; do [ -x "$b" ] || { echo "bench: $b not built"; exit 2; }; done
command -v protoc >/dev/null && [ -f /usr/include/onnx/onnx.proto ] ||
  { echo "bench: needs protoc and /usr/include/onnx/onnx.proto (protobuf-compiler, libonnx-dev)"; exit 2; }
command -v ldb >/dev/null || { echo "bench: needs RocksDB's ldb (ci/install-deps.sh --bench: rocksdb-tools)"; exit 2; }
. "$root/tests/bench/lib.sh"  # free_port, gen_model N NAME DIR, now
tmp=$(mktemp -d)
wpids=()
cpid=""
cleanup() {
  [ -n "$cpid" ] && kill -9 "$cpid" 2>/dev/null || true
  for p in "${wpids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ -n "${TORQ_BENCH_KEEP:-}" ]; then echo "bench: logs and store kept in $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT

jobs_total=$((3 * layers))
echo "== million-job bench, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
echo "model: a chain of $layers Relu layers, $jobs_total jobs; $nw workers x capacity $cap, noop executor"
gen_model "$layers" chain "$tmp"
port=$(free_port)
for ((i = 0; i < nw; i++)); do
  "$worker" --connect "tcp://127.0.0.1:$port" --id "sw$i" --capacity "$cap" --cache "$tmp/cache-$i" \
    --bench-executor noop -v 2>"$tmp/w$i.log" &
  wpids+=($!)
done

# start_coordinator N: run N of the same command, summary to $tmp/runN.out.
start_coordinator() {
  "$coord" --model "$tmp/chain.onnx" --db "$tmp/db" --export "$tmp/out" --bind "tcp://127.0.0.1:$port" \
    --min-workers "$nw" >"$tmp/run$1.out" 2>"$tmp/run$1.err" &
  cpid=$!
}
hwm() { sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$1/status" 2>/dev/null || echo 0; }

t0=$(now)
start_coordinator 1
# Half-way: the coordinator's log line "jobs N/M" (every thousandth of the
# run) says half the jobs are done.
half=$((jobs_total / 2))
while :; do
  kill -0 "$cpid" 2>/dev/null || { echo "bench: the first run ended before half-way"; tail -5 "$tmp/run1.err"; exit 1; }
  done_now=$(grep -ao '\] jobs [0-9]*/' "$tmp/run1.err" | tail -1 | tr -dc 0-9 || true)
  [ -n "$done_now" ] && [ "$done_now" -ge "$half" ] && break
  sleep 0.2
done
peak1=$(hwm "$cpid")
kill -9 "$cpid"
wait "$cpid" 2>/dev/null || true
cpid=""
t_kill=$(now)
run_id=$(sed -n 's/^\[coordinator\] run \([0-9a-f]*\):.*/\1/p' "$tmp/run1.err" | head -1)
# The jobs the killed coordinator had committed (state D), read from its
# store by ldb as a secondary instance.
if ! ldb --db="$tmp/db" --secondary_path="$tmp/ldb-secondary" --column_family=jobs --value_hex scan \
  >"$tmp/jobs.scan" 2>"$tmp/ldb.err"; then
  echo "bench: ldb could not read the killed store:"; cat "$tmp/ldb.err"; exit 1
fi
awk -F' : ' -v p="$run_id/" 'index($1, p) == 1 && $2 ~ /^0x44/ {print substr($1, length(p) + 1)}' \
  "$tmp/jobs.scan" >"$tmp/done1.ids"
rm -f "$tmp/jobs.scan"
done_at_kill=$(wc -l <"$tmp/done1.ids")
echo "killed with SIGKILL at $(awk -v a="$t0" -v b="$t_kill" 'BEGIN{printf "%.1f", b-a}') s with $done_now/$jobs_total jobs reported done; $done_at_kill done in the store (ldb)"
[ "$done_at_kill" -gt 0 ] || { echo "bench: ldb found no done job of run $run_id"; cat "$tmp/ldb.err"; exit 1; }

start_coordinator 2
wait_pid=$cpid
while kill -0 "$wait_pid" 2>/dev/null; do sleep 0.5; done
rc=0
wait "$cpid" || rc=$?
cpid=""
t_end=$(now)
if [ "$rc" -ne 0 ] || ! grep -q ": complete ==" "$tmp/run2.out"; then
  echo "bench: the restarted run failed (exit $rc)"; tail -20 "$tmp/run2.err"; exit 1
fi
for p in "${wpids[@]}"; do kill "$p" 2>/dev/null || true; done
for p in "${wpids[@]}"; do wait "$p" 2>/dev/null || true; done
wpids=()

report="$tmp/out/torq_gen_config_chain.json"
with_result=$({ grep -o '"job_id": "[^"]*"' "$report" || true; } | sort -u | wc -l)
lost=$((jobs_total - with_result))
sed -n 's/.*\] finished \([^:]*\): .*/\1/p' "$tmp"/w*.log | sort >"$tmp/ran.ids"
ran=$(wc -l <"$tmp/ran.ids")
duplicated=$(uniq -d "$tmp/ran.ids" | wc -l)
again_after_kill=$(sort "$tmp/done1.ids" | comm -12 - <(uniq -d "$tmp/ran.ids") | wc -l)
phases=$(grep '^phases' "$tmp/run2.out" || true)
resume=$(sed -n 's/^phases *first job sent at \([0-9.]*\) s.*/\1/p' "$tmp/run2.out")
export_s=$(sed -n 's/^phases.* export \([0-9.]*\) s.*/\1/p' "$tmp/run2.out")
# The restarted coordinator's own peak (getrusage), from its phases line.
peak2=$(sed -n 's/^phases.*coordinator peak RSS \([0-9]*\) MB.*/\1/p' "$tmp/run2.out")
peak1=$((peak1 / 1024))
for f in resume export_s peak2; do
  [[ ${!f} =~ ^[0-9.]+$ ]] || { echo "bench: no $f figure in the restarted run's phases line: $phases"; exit 1; }
done
peak=$((peak1 > peak2 ? peak1 : peak2))
wall=$(awk -v a="$t0" -v b="$t_end" 'BEGIN{printf "%.1f", b-a}')
echo "restarted run: $(sed -n 's/^jobs *//p' "$tmp/run2.out")"
echo "restarted run: $phases"
echo "workers ran $ran jobs in all; $duplicated ran more than once ($again_after_kill of them done in the store at the kill)"
echo "coordinator peak RSS: first run $peak1 MB (VmHWM before the kill), restarted run $peak2 MB"
echo "million: jobs $jobs_total, wall $wall s, peak RSS $peak MB, resume $resume s, lost $lost, duplicated $duplicated, export $export_s s"
verdict() { awk -v v="$1" -v g="$2" 'BEGIN{print (v <= g) ? "MET" : "NOT MET"}'; }
echo "goals: peak RSS <= 1024 MB $(verdict "$peak" 1024), resume <= 10 s $(verdict "$resume" 10), lost 0 $(verdict "$lost" 0)," \
  "duplicated 0 $(verdict "$duplicated" 0), export <= 60 s $(verdict "$export_s" 60)"
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
