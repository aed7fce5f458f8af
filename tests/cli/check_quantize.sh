#!/usr/bin/env bash
# torq-gen-config quantize end to end on a real model file: the quantized
# model is written, runs on the engine, and its graph outputs stay close to
# the fp32 model's on discovery's held-out input (PCC >= MIN_PCC, per tensor
# and per channel); re-quantizing it and bad options are exit 2. FORMAT
# qoperator (default qdq) also checks the report's count of integer ops and
# that the model holds QLinearConv nodes. --threads 1 writes the same bytes
# as every core, and --no-measure the same bytes without the error report.
# It also says where it is:
# "[progress]" lines (calibration, rewrite, measure) at $TORQ_PROGRESS_MS.
# Usage: check_quantize.sh TORQ_GEN_CONFIG TORQ_SIM MODEL MIN_PCC WORKDIR [FORMAT]
set -uo pipefail
gen="$1"; sim="$2"; model="$3"; min_pcc="$4"; work="$5"; format="${6:-qdq}"
rm -rf "$work"; mkdir -p "$work"
fail() { echo "check_quantize: $*"; exit 1; }
pcc_of() { sed -n 's/.*PCC \([0-9.e-]*\),.*/\1/p' <<<"$1" | head -1; }

for mode in "" "--per-channel"; do
  # TORQ_PROGRESS_MS=1: its "[progress]" lines every millisecond (issue 31).
  out=$(TORQ_PROGRESS_MS=1 "$gen" quantize --model "$model" --output-dir "$work" $mode --quant-format "$format" \
        --num-calib 4 2>&1) || fail "quantize $mode --quant-format $format: exit $?: $out"
  echo "$out"
  grep -q '^\[progress\] torq-gen-config quantize: ' <<<"$out" || fail "no [progress] line"
  bad_progress=$(grep '^\[progress\]' <<<"$out" | grep -Ev '^\[progress\] torq-gen-config quantize: (calibrating: input [1-4]/4|rewriting the graph as (QDQ|QOperator)|measuring the quantized model against the fp32 one) \([0-9]+ s\)$')
  [ -z "$bad_progress" ] || fail "unexpected [progress] lines: $bad_progress"
  q="$work/$(basename "$model" .onnx)_quant.onnx"
  [ "$(basename "$model")" = model.onnx ] && q="$work/$(basename "$(dirname "$model")")_quant.onnx"
  [ -s "$q" ] || fail "no quantized model at $q"
  pcc=$(pcc_of "$out")
  [ -n "$pcc" ] || fail "no PCC in the output"
  awk -v p="$pcc" -v m="$min_pcc" 'BEGIN { exit !(p >= m) }' || fail "PCC $pcc < $min_pcc ($mode)"
  grep -q "quantization error per tensor" <<<"$out" || fail "no per-tensor error table"
  grep -q "^quantized (static int8, $format, " <<<"$out" || fail "the report does not name the format $format"
  if [ "$format" = qoperator ]; then
    grep -Eq "^qoperator ops: integer [1-9][0-9]* \(.*QLinearConv [1-9]" <<<"$out" || fail "no integer ops reported"
    grep -Eq "; stayed QDQ [0-9]+" <<<"$out" || fail "no count of the ops that stayed QDQ"
    grep -q QLinearConv "$q" || fail "no QLinearConv in $q"
  fi
  "$sim" run "$q" > "$work/run.log" 2>&1 || fail "the quantized model does not run: $(tail -3 "$work/run.log")"
done

# One calibration thread (what a matrix run asks for, beside its workers)
# makes the same model, byte for byte, as every core.
"$gen" quantize --model "$model" --output "$work/t1.onnx" --quant-format "$format" --num-calib 4 --threads 1 \
  >/dev/null 2>&1 || fail "quantize --threads 1: exit $?"
"$gen" quantize --model "$model" --output "$work/t0.onnx" --quant-format "$format" --num-calib 4 --threads 0 \
  >/dev/null 2>&1 || fail "quantize --threads 0: exit $?"
# Byte for byte where the engine's fp32 sums do not depend on the thread
# count; where oneDNN splits a reduction across threads (its AVX2 inner
# product on the shared models, seen on a 2-core AVX2 machine) the ranges,
# and so the scales, may differ in their last bits: the graphs must be the
# same, every zero point and integer weight equal, every scale within 1e-5.
if ! cmp -s "$work/t0.onnx" "$work/t1.onnx"; then
  /usr/bin/python3 - "$work/t0.onnx" "$work/t1.onnx" <<'PY' || fail "--threads 1 and --threads 0 wrote different models"
import sys, onnx, numpy as np
from onnx import numpy_helper
a, b = (onnx.load(p) for p in sys.argv[1:3])
ga, gb = a.graph, b.graph
assert [(n.op_type, list(n.input), list(n.output)) for n in ga.node] == \
       [(n.op_type, list(n.input), list(n.output)) for n in gb.node], "the graphs differ"
ia = {t.name: numpy_helper.to_array(t) for t in ga.initializer}
ib = {t.name: numpy_helper.to_array(t) for t in gb.initializer}
assert ia.keys() == ib.keys(), "the initializers differ"
worst = 0.0
for k in ia:
    x, y = ia[k], ib[k]
    assert x.dtype == y.dtype and x.shape == y.shape, k
    if x.dtype.kind == "f":
        assert np.allclose(x, y, rtol=1e-5, atol=0), f"{k}: {np.max(np.abs(x - y))}"
        worst = max(worst, float(np.max(np.abs(x - y) / np.maximum(np.abs(x), 1e-30))) if x.size else 0.0)
    else:
        assert np.array_equal(x, y), f"{k}: integer values differ"
print(f"check_quantize: --threads 1 and 0 differ only in float scales (worst relative {worst:.2e})")
PY
fi
# --no-measure (what a matrix run asks for: its tests measure the model
# themselves) writes the same model, says it did not measure it, and prints
# no error figures.
out=$("$gen" quantize --model "$model" --output "$work/nm.onnx" --quant-format "$format" --num-calib 4 --threads 1 \
      --no-measure 2>&1) || fail "quantize --no-measure: exit $?: $out"
cmp -s "$work/t1.onnx" "$work/nm.onnx" || fail "--no-measure wrote a different model"
grep -q "^not measured against the fp32 model (--no-measure)$" <<<"$out" || fail "--no-measure does not say so: $out"
! grep -q "PCC\|quantization error per tensor" <<<"$out" || fail "--no-measure printed error figures: $out"
out=$("$gen" quantize --model "$model" --threads -1 -o "$work/x" 2>&1); rc=$?
[ "$rc" != 0 ] && grep -q -- "--threads" <<<"$out" || fail "--threads -1: exit $rc: $out"

out=$("$gen" quantize --model "$q" --output-dir "$work/again" 2>&1); rc=$?
[ "$rc" = 2 ] || fail "re-quantizing: exit $rc, wanted 2"
grep -q "already quantized (QuantizeLinear\|already quantized (DequantizeLinear" <<<"$out" || fail "re-quantizing: $out"
out=$("$gen" quantize --model "$model" --num-calib 0 -o "$work/x" 2>&1); rc=$?
[ "$rc" = 2 ] && grep -q -- "--num-calib must be at least 1" <<<"$out" || fail "--num-calib 0: exit $rc: $out"
out=$("$gen" quantize --model "$model" --quant-format qfoo -o "$work/x" 2>&1); rc=$?
[ "$rc" = 2 ] && grep -q -- "--quant-format must be qdq or qoperator" <<<"$out" || fail "--quant-format qfoo: exit $rc: $out"
out=$("$gen" quantize --model "$work/no-such.onnx" 2>&1); rc=$?
[ "$rc" = 2 ] && grep -q "no-such.onnx" <<<"$out" || fail "missing model: exit $rc: $out"
echo "check_quantize: OK"
