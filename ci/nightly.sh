#!/usr/bin/env bash
# Nightly matrix run on one machine: builds the model zoo when SPEC runs on
# it (ci/make-zoo.sh: what is missing or stale; a built zoo costs well under
# a second), starts a torq-coordinator on a loopback port and WORKERS
# torq-worker processes (target sim), runs SPEC and leaves everything in
# OUT_DIR: junit.xml, summary.json, report.html,
# suggested.yaml (when the config could be tightened), reports/<test-id>/
# (report JSON, compiler JSON, torch-mlir import) and the process logs. The
# coordinator's phases, a line per test as it finishes and its "[progress]"
# lines (tests and jobs done, jobs/s, ETA; at least every 5 s) are shown here
# as they come. With HTTP=HOST:PORT the coordinator serves its status there
# (/metrics, /api/status, a live page; `torq-coordinator status --http URL`).
#
# Usage: ci/nightly.sh [OUT_DIR] [SPEC] [-- extra torq-coordinator args, e.g. -k resnet]
#   env: WORKERS (default 2), BUILD_DIR (default build), PRESET (default nightly),
#        HTTP (e.g. 127.0.0.1:8080: the coordinator's --http; default none),
#        PREFETCH (each worker's --prefetch, default 2: a lane starts its next
#          job at once instead of waiting a round trip to the coordinator
#          for it: the zoo nightly's job phase with 1 worker fell from
#          213-236 s to 171-176 s, with 2 from 179-186 s to 161-178 s),
#        WORKER_ARGS (more torq-worker arguments, e.g. "--threads 2"; default none)
#   SPEC default configs/nightly.yaml (the zoo, build/zoo)
# Exit: the coordinator's (0 all outcomes expected, 1 unexpected outcomes, 2 bad input,
# also a zoo that cannot be built: no python3-torch),
# 3 when it stopped early without outcomes (the store keeps the progress).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-nightly-out}
SPEC=${2:-configs/nightly.yaml}
shift $(( $# >= 2 ? 2 : $# ))
[ "${1:-}" = "--" ] && shift
BIN=${BUILD_DIR:-build}/bin
WORKERS=${WORKERS:-2}
PREFETCH=${PREFETCH:-2}
[[ $PREFETCH =~ ^[0-9]+$ ]] || { echo "nightly: PREFETCH '$PREFETCH' is not a number of jobs" >&2; exit 2; }
PRESET=${PRESET:-nightly}
for b in torq-coordinator torq-worker; do
  [ -x "$BIN/$b" ] || { echo "nightly: $BIN/$b missing: run ci/build.sh first" >&2; exit 2; }
done
# The zoo specs (configs/nightly.yaml, push.yaml) name build/zoo/*/model.onnx.
if grep -Eq '^\s*-\s.*build/zoo/' "$SPEC"; then
  ci/make-zoo.sh build/zoo || { echo "nightly: the model zoo could not be built (ci/make-zoo.sh)" >&2; exit 2; }
fi
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
# A free loopback port chosen by the kernel.
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
EP="tcp://127.0.0.1:$PORT"

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

echo "nightly: $SPEC (preset $PRESET) on $EP with $WORKERS workers (prefetch $PREFETCH each) -> $OUT"
HTTP_ARGS=()
[ -n "${HTTP:-}" ] && HTTP_ARGS=(--http "$HTTP")
"$BIN/torq-coordinator" --spec "$SPEC" --preset "$PRESET" --bind "$EP" --db "$OUT/.torq-store" --export "$OUT" \
  "${HTTP_ARGS[@]}" "$@" 2> "$OUT/coordinator.log" &
coord=$!
for ((i = 0; i < WORKERS; i++)); do
  "$BIN/torq-worker" --connect "$EP" --target sim --id "nightly-w$i" --cache "$OUT/.worker-cache" --prefetch "$PREFETCH" ${WORKER_ARGS:-} \
    2> "$OUT/worker$i.log" &
  pids+=($!)
done
# Where the run is: the coordinator's phases, finished tests and "[progress]"
# lines (at least every 5 s) on this terminal too; its whole log stays in
# coordinator.log.
tail -n +1 -F --pid="$coord" "$OUT/coordinator.log" 2>/dev/null |
  grep --line-buffered -E '^\[progress\]|^\[coordinator\] (phase: |test [0-9]+/[0-9]+: |status on )' >&2 &
shower=$!
rc=0
wait "$coord" || rc=$?
wait "$shower" 2>/dev/null || true
if [ "$rc" = 0 ] && [ ! -f "$OUT/summary.json" ]; then
  echo "nightly: the coordinator stopped early (signal?): no outcomes; rerun to resume from $OUT/.torq-store" >&2
  rc=3
fi
echo "nightly: coordinator exit $rc; outputs in $OUT (junit.xml, summary.json, report.html, reports/)"
exit "$rc"
