#!/usr/bin/env bash
# Exports torchvision CNNs at opsets 7..17 (export_torchvision.py, PyTorch
# fp32 reference outputs) and checks that the engine reproduces each one:
# PCC >= 0.99999 and max |diff| <= 1e-3 * max |reference|.
# Usage: check_torchvision.sh TORQ_SIM OUT_DIR [--zoo] [NAME...]
#   OUT_DIR  where the cases are written (under the build tree)
#   --zoo    the model zoo (ci/make-zoo.sh OUT_DIR: cached models are
#            checked too) instead of the test cases
#   NAME     case or architecture names passed to the exporter's --only
set -uo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 TORQ_SIM OUT_DIR [--zoo] [NAME...]" >&2
  exit 2
fi
sim="$1"; out_dir="$2"; shift 2
zoo=0
if [ "${1:-}" = "--zoo" ]; then zoo=1; shift; fi
here="$(cd "$(dirname "$0")" && pwd)"
start=$(date +%s)

only=()
if [ $# -gt 0 ]; then only=(--only "$@"); fi
export_log="$out_dir.export.log"
mkdir -p "$out_dir"
if [ $zoo = 1 ]; then
  export_cmd=("$here/../../ci/make-zoo.sh" "$out_dir" "${only[@]}")
else
  export_cmd=(/usr/bin/python3 "$here/export_torchvision.py" "$out_dir" "${only[@]}")
fi
if ! "${export_cmd[@]}" >"$export_log" 2>&1; then
  tail -n 20 "$export_log"
  echo "torchvision: export failed (log: $export_log)"
  exit 1
fi
[ $zoo = 1 ] && cat "$export_log"
# Only the cases of this run (exported, or cached in the zoo), in order.
mapfile -t cases < <(sed -n 's/^\(exported\|cached\) \([^:]*\):.*/\2/p' "$export_log")
if [ ${#cases[@]} -eq 0 ]; then
  echo "torchvision: nothing exported (log: $export_log)"
  exit 1
fi
echo "torchvision: $([ $zoo = 1 ] && echo "zoo ready:" || echo exported) ${#cases[@]} case(s) in $(( $(date +%s) - start )) s"

passed=0; failed=0
for c in "${cases[@]}"; do
  d="$out_dir/$c"
  t0=$(date +%s.%N)
  log=$("$sim" run "$d/model.onnx" -i "$d/test_data_set_0/input_0.pb" \
        -e "$d/test_data_set_0/output_0.pb" -t 2 2>&1)
  rc=$?
  secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  line=$(echo "$log" | grep -m1 '^compare output 0 ')
  if [ $rc -ne 0 ] || [ -z "$line" ]; then
    printf '%-30s FAIL  exit %d: %s\n' "$c" "$rc" "$(echo "$log" | tail -n 1)"
    failed=$((failed + 1))
    continue
  fi
  # The compare line skips non-finite elements, so a partly NaN/Inf output
  # would look clean there; the output summary's mean shows them.
  if echo "$log" | grep '^  output ' | grep -Eqi '(nan|inf)'; then
    printf '%-30s FAIL  non-finite output: %s\n' "$c" "$(echo "$log" | grep -m1 '^  output ')"
    failed=$((failed + 1))
    continue
  fi
  # "compare output 0 with F: pcc P max_abs A max_ref R ..."; every figure
  # must be a finite number (awk would compare "nan" as true).
  verdict=$(echo "$line" | awk '
    function num(v) { return v ~ /^[-+]?[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?$/ }
    {
      for (i = 1; i < NF; i++) {
        if ($i == "pcc") p = $(i + 1); else if ($i == "max_abs") a = $(i + 1); else if ($i == "max_ref") r = $(i + 1)
      }
      if (!num(p) || !num(a) || !num(r) || r + 0 <= 0) {
        printf "FAIL  unusable comparison: pcc %s max_abs %s max_ref %s", p, a, r
        exit
      }
      ok = (p + 0 >= 0.99999 && a + 0 <= 1e-3 * r) ? "PASS" : "FAIL"
      printf "%s  pcc %.8f  max_abs %.3g  max_ref %.4g  max_abs/max_ref %.2e", ok, p, a, r, a / r
    }')
  printf '%-30s %s  (%s s)\n' "$c" "$verdict" "$secs"
  case "$verdict" in
    PASS*) passed=$((passed + 1)) ;;
    *) failed=$((failed + 1)) ;;
  esac
done
echo "$passed passed, $failed failed ($(( $(date +%s) - start )) s)"
[ "$failed" -eq 0 ]
