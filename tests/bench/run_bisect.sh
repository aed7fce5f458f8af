#!/usr/bin/env bash
# `torq-gen-config run` (issue 9, Performance): wall time of the assigned
# full-model run of each reference CNN converted to bf16, after discover,
# once computed (--recompute-cache) and once resumed from the store, next to
# the peer measured in the same run: one plain bf16 inference of the whole
# model by `torq-sim run` as a command (process start, import, one run).
# Then the auto-bisect of a chain of 300 bf16 Muls whose layers all pass
# alone but whose chain does not: range runs used (goal < 20).
# Usage: tests/bench/run_bisect.sh [BUILD_DIR] [MODEL...]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/build}"; shift || true
shared="${TORQ_SHARED_DIR:-$root/../shared}"
models=("$@"); [ ${#models[@]} -gt 0 ] || models=(squeezenet1.0 mobilenetv2 resnet18 efficientnet_b1)
gen="$build/bin/torq-gen-config"; sim="$build/bin/torq-sim"
[ -x "$gen" ] || { echo "bench: $gen not built"; exit 2; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
secs() { local t0 t1; t0=$(date +%s.%N); "$@" > /dev/null 2>&1 || true; t1=$(date +%s.%N); awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b-a}'; }
echo "== run and bisect, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"
printf '%-16s %6s %11s %11s %10s %9s %s\n' model ops run_s resumed_s peer_s ratio result
for m in "${models[@]}"; do
  model="$shared/models/$m/model.onnx"
  out="$tmp/$m"
  "$gen" discover --model "$model" -o "$out" --auto-convert-bf16 -q > /dev/null 2>&1 || true
  fresh=$(secs "$gen" run --model "$model" -o "$out" --auto-convert-bf16 --recompute-cache)
  resumed=$(secs "$gen" run --model "$model" -o "$out" --auto-convert-bf16)
  peer=$(secs "$sim" run "$model" --numerics bf16 --threads 1)
  line=$( ("$gen" run --model "$model" -o "$out" --auto-convert-bf16 2>&1 || true) | grep -E "Result:|\(of [0-9]+ ops\)" | tr -s ' ' | tr '\n' ' ')
  ops=$(echo "$line" | sed -n 's/.*(of \([0-9]*\) ops).*/\1/p')
  ratio=$(awk -v a="$fresh" -v b="$peer" 'BEGIN{printf "%.2f", a/b}')
  printf '%-16s %6s %11s %11s %10s %9s %s\n' "$m" "$ops" "$fresh" "$resumed" "$peer" "$ratio" "$(echo "$line" | sed -n 's/.*Result: \([A-Z]*\).*/\1/p')"
done
echo "(run_s: run --recompute-cache after discover, whole command with its local worker; goal < 2 s for"
echo " efficientnet_b1; ratio = run_s / peer_s, peer = torq-sim run of the bf16 model, one thread)"
/usr/bin/python3 - "$tmp/chain300.onnx" <<'PY'
import sys, numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto
nodes, inits, prev = [], [], "x"
for i in range(300):
    inits.append(numpy_helper.from_array(np.array(1.1 if i % 2 == 0 else 0.9, dtype=np.float32), f"c{i}"))
    out = "y" if i == 299 else f"m{i}"
    nodes.append(helper.make_node("Mul", [prev, f"c{i}"], [out], name=f"Mul_{out}"))
    prev = out
g = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])], inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]); m.ir_version = 8
onnx.save(m, sys.argv[1])
PY
flags=(--model "$tmp/chain300.onnx" -o "$tmp/chain" --auto-convert-bf16 --bf16-rounding rne)
"$gen" discover "${flags[@]}" -q > /dev/null 2>&1 || true
t=$(secs "$gen" run "${flags[@]}" --recompute-cache)
range=$( ("$gen" run "${flags[@]}" 2>&1 || true) | sed -n 's/.*First failing range: \(layers [0-9.]*\).*\[\([0-9]*\) bisect runs\].*/\1, \2 range runs/p')
echo "bisect of a 300-layer chain (every layer passes alone): $range; run + bisect ${t} s (goal < 20 range runs)"
