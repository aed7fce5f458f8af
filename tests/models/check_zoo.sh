#!/usr/bin/env bash
# The model zoo of ci/make-zoo.sh on a few of its models, from scratch:
#  1. built into a fresh OUT_DIR, each model checked against its PyTorch
#     output by the engine (check_torchvision.sh --zoo: PCC >= 0.99999,
#     max |diff| <= 1e-3 * max |reference|);
#  2. a second build exports nothing (every stamp matches), leaves the files
#     as they were, and takes under 5 s (it imports no torch);
#  3. a stamp whose key is not the current one (another exporter or torch)
#     is exported again, to the same bytes (the exports are deterministic,
#     which is what lets a stamp stand for its files).
# Usage: check_zoo.sh TORQ_SIM OUT_DIR NAME...
set -uo pipefail
if [ $# -lt 3 ]; then
  echo "usage: $0 TORQ_SIM OUT_DIR NAME..." >&2
  exit 2
fi
sim="$1"; out="$2"; shift 2
names=("$@")
here="$(cd "$(dirname "$0")" && pwd)"
zoo="$here/../../ci/make-zoo.sh"
fail() { echo "zoo: FAIL: $*"; exit 1; }
hashes() { (cd "$out" && find "${names[@]}" -type f \( -name '*.onnx' -o -name '*.pb' \) -print0 | sort -z | xargs -0 sha256sum); }

rm -rf "$out" "$out.export.log"
"$here/check_torchvision.sh" "$sim" "$out" --zoo "${names[@]}" || fail "export or engine check"
for n in "${names[@]}"; do
  grep -q "^exported $n: " "$out.export.log" || fail "$n was not exported into the fresh $out"
done
before=$(hashes)

t0=$(date +%s.%N)
log=$("$zoo" "$out" --only "${names[@]}" 2>&1) || fail "second build: $log"
secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
echo "$log"
echo "$log" | grep -q "^zoo: ${#names[@]} models in $out: 0 exported now (0.0 s), ${#names[@]} cached;" \
  || fail "the second build exported again"
[ "$(hashes)" = "$before" ] || fail "the second build changed files"
awk -v s="$secs" 'BEGIN { exit !(s < 5) }' || fail "the second build took $secs s (>= 5 s)"
echo "zoo: second build: all cached in $secs s"

stamp="$out/${names[0]}/zoo-stamp.json"
sed -i 's/"key": "[0-9a-f]*"/"key": "0000"/' "$stamp"
log=$("$zoo" "$out" --only "${names[@]}" 2>&1) || fail "rebuild after a stale stamp: $log"
echo "$log" | grep -q "^exported ${names[0]}: " || fail "a stale stamp did not re-export ${names[0]}: $log"
echo "$log" | grep -q ": 1 exported now" || fail "a stale stamp re-exported more than its model: $log"
[ "$(hashes)" = "$before" ] || fail "re-exporting ${names[0]} gave other bytes (the export is not deterministic)"
echo "zoo: a stale stamp re-exports its model only, to the same bytes"
echo "zoo: PASS (${names[*]})"
