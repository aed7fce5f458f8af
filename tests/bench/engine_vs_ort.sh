#!/usr/bin/env bash
# Engine vs ONNX Runtime latency, measured in one run on this machine: for
# each model, the simulator engine in fp32 and in bf16 numerics (torq-sim run
# --bench, host profile) and ONNX Runtime's CPU provider in fp32
# (ort_bench.mjs: intra-op threads = THREADS, inter-op 1, all graph
# optimizations), min of RUNS runs each. Models: the four reference CNNs of
# ../shared/models and one torchvision model per supported family, exported
# once with seeded weights into BUILD_DIR/bench-models (export_bench_models.py).
# Prints the table, the worst ratio engine/ORT and the machine's load at the
# start and the end, then the per-op comparison of the worst model.
#
# Usage: tests/bench/engine_vs_ort.sh [--only M1,M2,...] [--rounds K] [BUILD_DIR] [RUNS=20] [THREADS=2]
#        tests/bench/engine_vs_ort.sh --per-op MODEL [BUILD_DIR] [RUNS=20] [THREADS=2]
#   --only     measure these models only (names as in the table)
#   --rounds   measure every model K times, round after round, and keep the
#              least min and median of each (default 1): on a shared VM whose
#              speed drifts over minutes, each side gets its chance at a quiet spell
#   --per-op   for one model: the engine's time per op type (torq-sim --per-op,
#              last of RUNS runs) next to ORT's profiler time per op type
#              (median of RUNS profiled runs), sorted by the engine's excess
#
# Needs ci/install-deps.sh --bench (onnxruntime-node in tests/bench/node_modules;
# Debian's python3-torch, python3-torchvision, python3-onnx for the exports).
# A model that fails to export or run is reported with its reason and the
# others are still measured; exit status 1 if any row is incomplete, 2 when
# the bench cannot run at all.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"

usage() { sed -n '12,/^set /p' "$0" | sed -n 's/^# \{0,1\}//p'; exit 2; }
per_op=""; only=""; rounds=1
while [ $# -gt 0 ]; do
  case "$1" in
    --per-op) [ $# -ge 2 ] || usage; per_op="$2"; shift 2 ;;
    --only) [ $# -ge 2 ] || usage; only="$2"; shift 2 ;;
    --rounds) [ $# -ge 2 ] || usage; rounds="$2"; shift 2 ;;
    -h|--help) usage ;;
    -*) echo "engine_vs_ort: unknown option $1" >&2; usage ;;
    *) break ;;
  esac
done
build="${1:-$root/build}"; runs="${2:-20}"; threads="${3:-2}"
shared="${TORQ_SHARED_DIR:-$root/../shared}"
cache="${TORQ_BENCH_MODELS:-$build/bench-models}"
sim="$build/bin/torq-sim"
shared_models=(squeezenet1.0 mobilenetv2 resnet18 efficientnet_b1)
mapfile -t tv_models < <(/usr/bin/python3 "$here/export_bench_models.py" --list)

[ -x "$sim" ] || { echo "engine_vs_ort: $sim not built (run ci/build.sh)"; exit 2; }
[ -d "$shared/models" ] || { echo "engine_vs_ort: $shared/models not found"; exit 2; }
command -v node >/dev/null || { echo "engine_vs_ort: needs node (ci/install-deps.sh --bench)"; exit 2; }
[ -f "$here/node_modules/onnxruntime-node/package.json" ] ||
  { echo "engine_vs_ort: needs onnxruntime-node in $here/node_modules (ci/install-deps.sh --bench)"; exit 2; }
[[ "$runs" =~ ^[1-9][0-9]*$ && "$threads" =~ ^[1-9][0-9]*$ && "$rounds" =~ ^[1-9][0-9]*$ ]] ||
  { echo "engine_vs_ort: RUNS, THREADS and --rounds must be positive integers"; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Resolves the models named in "$@" to ONNX files, exporting the torchvision
# ones that are not cached yet: writes "NAME PATH" lines to $tmp/paths and
# "NAME REASON" lines to $tmp/failed.
resolve_models() {
  : > "$tmp/paths"; : > "$tmp/failed"
  local m tv=()
  for m in "$@"; do
    if [[ " ${shared_models[*]} " == *" $m "* ]]; then
      echo "$m $shared/models/$m/model.onnx" >> "$tmp/paths"
    else
      tv+=("$m")
    fi
  done
  [ ${#tv[@]} -gt 0 ] || return 0
  local t0=$SECONDS
  /usr/bin/python3 "$here/export_bench_models.py" "$cache" "${tv[@]}" > "$tmp/export.log" 2>&1
  sed -n 's/^model \([^ ]*\) \(.*\)$/\1 \2/p' "$tmp/export.log" >> "$tmp/paths"
  sed -n 's/^failed \([^:]*\): \(.*\)$/\1 export failed: \2/p' "$tmp/export.log" >> "$tmp/failed"
  grep '^# exported' "$tmp/export.log" | sed 's/^# /  /'
  for m in "${tv[@]}"; do
    grep -q "^$m " "$tmp/paths" "$tmp/failed" ||
      echo "$m export failed: $(tail -n 1 "$tmp/export.log")" >> "$tmp/failed"
  done
  [ $((SECONDS - t0)) -lt 2 ] || echo "  (exports: $((SECONDS - t0)) s, cached in $cache)"
}

# Prints "MIN MEDIAN" from a '^bench: N runs, min X ms, median Y ms' line, or fails.
bench_figures() { sed -n 's/^bench: .* min \([0-9.]*\) ms, median \([0-9.]*\) ms.*/\1 \2/p' <<< "$1" | grep .; }
# The last line of an output, on one line, for a failure reason.
reason() { tail -n 1 <<< "$1" | tr -s ' \t' ' ' | cut -c1-160; }
loadavg() { echo "loadavg $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cores)"; }

# The per-op comparison of model $2 (file $1): the engine's time per op type
# (last of the RUNS runs) against ORT's profiler time per model op type
# (median of RUNS profiled runs; a node ORT fused counts under the op ORT
# named it after, its absorbed activations cost nothing of their own),
# sorted by the engine's excess over ORT.
per_op_table() {
  local path="$1" name="$2" eng ort
  echo "== per op type: $name, engine fp32 (torq-sim --per-op, last of $runs runs) vs ORT profiler" \
       "(median of $runs runs), $threads threads; $(loadavg)"
  eng=$("$sim" run "$path" -t "$threads" --bench "$runs" --per-op 2>&1) ||
    { echo "engine failed: $(reason "$eng")"; return 1; }
  ort=$(node "$here/ort_bench.mjs" "$path" --runs "$runs" --threads "$threads" --per-op 2>&1) ||
    { echo "ORT failed: $(reason "$ort")"; return 1; }
  local ewall owall
  ewall=$(bench_figures "$eng" | cut -d' ' -f1); owall=$(bench_figures "$ort" | cut -d' ' -f1)
  printf '%-22s %5s %10s %5s %10s %10s %8s  %s\n' op nodes engine_ms nodes ORT_ms excess_ms eng/ORT "ORT kernels"
  { sed -n 's/^  \([A-Za-z0-9_.]*\) \+\([0-9]\+\) nodes \+\([0-9.]\+\) ms$/E \1 \2 \3/p' <<< "$eng"
    sed -n '/^per-op:/,$ s/^  \([A-Za-z0-9_.]*\) \+\([0-9]\+\) nodes \+\([0-9.]\+\) ms  (ORT \(.*\))$/O \1 \2 \3 \4/p' <<< "$ort"
  } | awk -v ewall="$ewall" -v owall="$owall" '
    $1 == "E" { en[$2] = $3; e[$2] = $4; ops[$2] = 1 }
    $1 == "O" { on[$2] = $3; o[$2] = $4; ops[$2] = 1; k = $5; for (i = 6; i <= NF; i++) k = k " " $i; as[$2] = k }
    END {
      sorter = "sort -t \"\t\" -k1,1gr | cut -f2-"
      for (op in ops) {
        x = e[op] - o[op]; te += e[op]; to += o[op]
        ratio = (o[op] > 0) ? sprintf("%.2f", e[op] / o[op]) : "-"
        line = sprintf("%.6f\t%-22s %5s %10.3f %5s %10.3f %10.3f %8s  %s", x, op, en[op] ? en[op] : "-", e[op],
                       on[op] ? on[op] : "-", o[op], x, ratio, (op in as) ? as[op] : "-")
        print line | sorter
      }
      close(sorter)
      printf "%-22s %5s %10.3f %5s %10.3f %10.3f %8.2f\n", "total (sum of ops)", "", te, "", to, te - to, (to > 0 ? te / to : 0)
      printf "%-22s %5s %10s %5s %10s %10.3f %8.2f\n", "wall (min of runs)", "", ewall, "", owall, ewall - owall, (owall > 0 ? ewall / owall : 0)
    }'
}

models=("${shared_models[@]}" "${tv_models[@]}")
[ -z "$only" ] || IFS=, read -r -a models <<< "$only"
[ -z "$per_op" ] || models=("$per_op")
for m in "${models[@]}"; do
  [[ " ${shared_models[*]} ${tv_models[*]} " == *" $m "* ]] ||
    { echo "engine_vs_ort: unknown model '$m'; known: ${shared_models[*]} ${tv_models[*]}"; exit 2; }
done

if [ -n "$per_op" ]; then
  resolve_models "$per_op"
  if [ -s "$tmp/failed" ]; then cat "$tmp/failed"; exit 1; fi
  per_op_table "$(cut -d' ' -f2- "$tmp/paths")" "$per_op"
  exit $?
fi

echo "== engine vs ONNX Runtime: min of $runs runs, $threads threads, $rounds round(s), $(date -u +%FT%TZ)," \
     "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "start: $(uptime | sed 's/^ *//'); $(loadavg)"
resolve_models "${models[@]}"

status=0
: > "$tmp/rounds"
for round in $(seq 1 "$rounds"); do
  for m in "${models[@]}"; do
    if grep -q "^$m " "$tmp/failed"; then
      echo "$m FAIL $(grep -m1 "^$m " "$tmp/failed" | cut -d' ' -f2-)" >> "$tmp/rounds"; status=1; continue
    fi
    path=$(grep -m1 "^$m " "$tmp/paths" | cut -d' ' -f2-)
    f32=$("$sim" run "$path" -t "$threads" --bench "$runs" 2>&1)
    e32=$(bench_figures "$f32") || e32="FAIL engine fp32: $(reason "$f32")"
    b16=$("$sim" run "$path" -t "$threads" --bench "$runs" --numerics bf16 --rounding rne 2>&1)
    e16=$(bench_figures "$b16") || e16="FAIL engine bf16: $(reason "$b16")"
    ort=$(node "$here/ort_bench.mjs" "$path" --runs "$runs" --threads "$threads" 2>&1)
    o32=$(bench_figures "$ort") || o32="FAIL ORT: $(reason "$ort")"
    shape=$(sed -n 's/^ort: .*inputs [^ ]* [a-z0-9]* \[\([0-9,]*\)\].*/\1/p' <<< "$ort" | tr , x)
    echo "$m ${shape:--} | $e32 | $o32 | $e16" >> "$tmp/rounds"
    case "$e32$o32$e16" in *FAIL*) status=1 ;; esac
  done
  [ "$rounds" -eq 1 ] || echo "round $round/$rounds done: $(loadavg)"
done
# One row per model, in order: over the rounds, the least min and the least
# median of each measurement (a failure in any round is kept).
awk -F' [|] ' '
  !($1 in seen) { seen[$1] = 1; order[++n] = $1 }
  $1 ~ / FAIL / { row[$1] = $1; next }
  {
    for (i = 2; i <= 4; i++) {
      k = $1 SUBSEP i
      if (k in v && v[k] ~ /^FAIL/) continue
      if ($i ~ /^FAIL/ || !(k in v)) { v[k] = $i; continue }
      split(v[k], a, " "); split($i, b, " ")
      v[k] = (b[1] + 0 < a[1] + 0 ? b[1] : a[1]) " " (b[2] + 0 < a[2] + 0 ? b[2] : a[2])
    }
  }
  END {
    for (j = 1; j <= n; j++) {
      id = order[j]
      if (id in row) print row[id]
      else print id " | " v[id SUBSEP 2] " | " v[id SUBSEP 3] " | " v[id SUBSEP 4]
    }
  }' "$tmp/rounds" > "$tmp/rows"

echo "end:   $(uptime | sed 's/^ *//'); $(loadavg) (includes this bench's own $threads threads)"
printf '%-20s %-11s %10s %10s %8s | %10s %9s | %10s %10s\n' \
  model input engine_ms ORT_ms eng/ORT bf16_ms bf16/fp32 eng_med_ms ORT_med_ms
awk -F' [|] ' '
  function fail(s) { return s ~ /^FAIL/ }
  {
    split($1, id, " "); m = id[1]; shape = id[2]
    if ($1 ~ / FAIL /) { printf "%-20s %s\n", m, substr($1, index($1, "FAIL")); next }
    split($2, e, " "); split($3, o, " "); split($4, b, " ")
    r = (!fail($2) && !fail($3)) ? sprintf("%.2f", e[1] / o[1]) : "-"
    rb = (!fail($2) && !fail($4)) ? sprintf("%.2f", b[1] / e[1]) : "-"
    # A median far above the min: something else ran during this row.
    noisy = (!fail($2) && e[2] > 1.25 * e[1]) || (!fail($3) && o[2] > 1.25 * o[1]) || (!fail($4) && b[2] > 1.25 * b[1])
    printf "%-20s %-11s %10s %10s %8s | %10s %9s | %10s %10s%s\n", m, shape,
           fail($2) ? "-" : e[1], fail($3) ? "-" : o[1], r, fail($4) ? "-" : b[1], rb,
           fail($2) ? "-" : e[2], fail($3) ? "-" : o[2], noisy ? "  noisy" : ""
    for (i = 2; i <= 4; i++) if (fail($i)) printf "  %s\n", $i
    if (r != "-") {
      n++; logsum += log(r)
      if (r + 0 > worst) { worst = r + 0; wm = m }
    }
  }
  END {
    if (n) printf "worst engine/ORT: %.2f (%s); geometric mean over %d models: %.2f\n", worst, wm, n, exp(logsum / n)
    if (wm != "") print wm > "'"$tmp/worst"'"
  }' "$tmp/rows"
echo "(ms = host wall time per inference, min of $runs after warm-up$([ "$rounds" -eq 1 ] || echo ", least of $rounds rounds"); eng/ORT and bf16/fp32: lower is better;"
echo " the engine's bf16 numerics are fp32 weights/inputs rounded to bf16 (rne), fp32 accumulation; ORT runs fp32;"
echo " noisy: a median > 1.25 x its min, the machine was busy during that row: rerun it with --only)"

if [ -s "$tmp/worst" ]; then
  worst=$(cat "$tmp/worst")
  echo
  per_op_table "$(grep -m1 "^$worst " "$tmp/paths" | cut -d' ' -f2-)" "$worst" || status=1
fi
exit $status
