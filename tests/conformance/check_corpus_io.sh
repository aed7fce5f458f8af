#!/usr/bin/env bash
# The stand-in's tensor I/O against real artifacts (issue 28): for every
# node test of ../shared/reference/iree-import whose model Debian's
# libonnx-testdata ships, the stand-in imports Debian's model, compiles it
# for host and runs it with the corpus's own runner flags
# (run_module_io_flags.txt: IREE's element-type names, the raw .bin inputs
# and --expected_output files the real runner was given), in the corpus
# folder. The tests: every one whose flags name an element type other than
# f32 and i64 (bf16, f16, f64, i32, i16, i8, ui8, i1: the rare layouts) and
# every fourth of the rest, about 375 of 871 (the whole corpus takes
# minutes of process starts). Every flag file must parse (types and raw
# sizes as the real runner reads them) and at least MIN tests must match
# their expected outputs (some cannot: ONNX 1.17's test data against
# Debian's 1.12 models, random ops, ops the engine lacks).
# Usage: check_corpus_io.sh TORQ_SIM CORPUS_NODE_DIR DEBIAN_NODE_DIR MIN
set -uo pipefail
sim="$(readlink -f "$1")"; corpus="$2"; debian="$3"; min="$4"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# One test: prints "<outcome> <name>[: detail]".
one() {
  local t="$1" name work out func
  name=$(basename "$t")
  work="$tmp/$name"; mkdir -p "$work"
  if ! "$sim" torq-import-onnx "$debian/$name/model.onnx" -o "$work/m.mlir" >/dev/null 2>&1 ||
     ! "$sim" torq-compile "$work/m.mlir" -o "$work/m.vmfb" --torq-hw=SL2610 --torq-disable-slices \
         --torq-disable-css >/dev/null 2>&1; then
    echo "refused $name"; rm -rf "$work"; return
  fi
  func=$(sed -n 's/^ *func\.func @"\{0,1\}\([^"(]*\)"\{0,1\}(.*/\1/p' "$work/m.mlir" | head -n 1)
  mapfile -t flags < "$t/run_module_io_flags.txt"
  out=$(cd "$t" && "$sim" torq-run-module --module="$work/m.vmfb" --function="$func" --torq_hw_type=sim \
        "${flags[@]}" 2>&1)
  rm -rf "$work"
  case "$out" in
    *"[SUCCESS]"*) echo "matched $name" ;;
    *"[FAILED]"*) echo "differ $name" ;;
    *"bad tensor type"*|*"bytes"*|*"takes TYPE"*|*"SHAPExDTYPE"*|*"unknown argument"*)
      echo "io $name: $(echo "$out" | tail -n 1)" ;;
    *) echo "refused $name" ;;
  esac
}
export -f one
export sim debian tmp

list=()
i=0
rare='x(bf16|f16|f64|i16|i8|i1|i32|ui8)=|=(bf16|f16|f64|i16|i8|i1|i32|ui8)='
for t in "$corpus"/*/; do
  name=$(basename "$t")
  [ -f "$debian/$name/model.onnx" ] && [ -f "$t/run_module_io_flags.txt" ] || continue
  i=$((i + 1))
  if grep -qE "$rare" "$t/run_module_io_flags.txt" || [ $((i % 4)) -eq 0 ]; then list+=("${t%/}"); fi
done
printf '%s\n' "${list[@]}" | xargs -P 1 -I{} bash -c 'one "$1"' _ {} > "$tmp/results"
pass=$(grep -c '^matched ' "$tmp/results")
mismatch=$(grep -c '^differ ' "$tmp/results")
refused=$(grep -c '^refused ' "$tmp/results")
io=$(grep -c '^io ' "$tmp/results")
grep '^io ' "$tmp/results" | head -20
echo "corpus io: ${#list[@]} tests: $pass matched, $mismatch differ, $refused not run by the engine, $io flag files refused"
if [ "$io" -ne 0 ]; then echo "corpus io: $io flag files the real runner read were refused"; exit 1; fi
if [ "$pass" -lt "$min" ]; then echo "corpus io: only $pass matched, need $min"; exit 1; fi
echo "corpus io: OK"
