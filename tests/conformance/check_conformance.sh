#!/usr/bin/env bash
# Runs Debian's ONNX backend tests through the engine (host profile) and
# holds the bar of issue 2: at least MIN_PASS cases pass and none fails.
# Usage: check_conformance.sh TORQ_SIM MIN_PASS DIR...
set -uo pipefail
sim="$1"; min_pass="$2"; shift 2
out=$(mktemp)
"$sim" conformance "$@" >"$out" 2>&1
rc=$?
grep -E '^(FAIL|UNSUPPORTED)' "$out" | head -400
summary=$(tail -n 1 "$out")
echo "$summary"
passed=$(echo "$summary" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed.*/\1/p')
failed=$(echo "$summary" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed.*/\2/p')
rm -f "$out"
if [ -z "$passed" ]; then echo "conformance: no summary line (exit $rc)"; exit 1; fi
if [ "$failed" != 0 ]; then echo "conformance: $failed case(s) FAIL"; exit 1; fi
if [ "$passed" -lt "$min_pass" ]; then echo "conformance: only $passed passed, need $min_pass"; exit 1; fi
echo "conformance: OK ($passed passed >= $min_pass, 0 failed)"
