#!/usr/bin/env bash
# Inference quality of the probe, measured (issue 34): a profile the probe
# does not know in advance (hidden_nss.yaml) plays the chip. The default
# spec is probed on it (nss only), and each model is discovered twice on
# nss: under the hidden profile, and under the profile the probe derived
# (targets.yaml). `torq-gen-config compare --executor nss` counts the
# layers whose nss status (runs = success or difference, fails = error)
# agrees; pooled over the models it must be >= MIN (0.99). Disagreeing
# layers are printed.
# MODEL.onnx is discovered in bf16 (--auto-convert-bf16); MODEL.onnx:int8
# quantized first (--quantize: static int8 QDQ), judging the int: rules.
# Usage: check_hidden_profile.sh TORQ_GEN_CONFIG OUT_DIR MIN MODEL.onnx[:int8]...
set -euo pipefail
gen="$1"; out="$2"; min="$3"; shift 3
here="$(cd "$(dirname "$0")" && pwd)"
src="$(cd "$here/../.." && pwd)"
[ "$#" -gt 0 ] || { echo "check_hidden_profile: no model given" >&2; exit 2; }
rm -rf "$out"; mkdir -p "$out"
cp "$here/hidden_nss.yaml" "$out/hidden_nss.yaml"
echo "nss: hidden_nss.yaml" > "$out/hidden.yaml"
start=$(date +%s.%N)
"$gen" probe --spec "$src/configs/probe/default.yaml" --targets "$out/hidden.yaml" --skip-executors css,host \
    -o "$out/probe" | grep -v "^\[probe\] jobs" | tee "$out/probe.log"
echo "probe wall: $(echo "$(date +%s.%N) - $start" | bc) s"
# The derived profile explains the probe's own points.
explained=$(sed -n 's/^envelope nss: \([0-9]*\)\/\([0-9]*\) points explained.*/\1 \2/p' "$out/probe.log")
read -r e n <<< "$explained"
awk -v e="$e" -v n="$n" -v m="$min" 'BEGIN{exit !(n > 0 && e / n >= m)}' ||
  { echo "the derived profile explains only $e/$n probe points"; exit 1; }
agreed_all=0; total_all=0
printf '%-40s %8s %8s\n' model layers agree
i=0
for arg in "$@"; do
  i=$((i + 1))
  model=${arg%:int8}
  convert=(--auto-convert-bf16); dtype=bf16
  [ "$model" != "$arg" ] && { convert=(--quantize); dtype=int8; }
  name=$i-$(basename "$(dirname "$model")")-$dtype
  for side in hidden derived; do
    targets="$out/hidden.yaml"; [ "$side" = derived ] && targets="$out/probe/targets.yaml"
    rc=0
    "$gen" discover --model "$model" -o "$out/$side-$name" "${convert[@]}" --skip-executors css,host \
        --targets "$targets" -q || rc=$?
    [ "$rc" -le 1 ] || { echo "discover of $name under the $side profile failed (exit $rc)"; exit 2; }
  done
  ra=$(ls "$out/hidden-$name"/torq_gen_config_*.json | grep -v _compiler.json | head -1)
  rb=$(ls "$out/derived-$name"/torq_gen_config_*.json | grep -v _compiler.json | head -1)
  "$gen" compare "$ra" "$rb" --executor nss --json > "$out/compare-$name.json"
  read -r agreed total <<< "$(/usr/bin/python3 -c '
import json, sys
e = json.load(open(sys.argv[1]))["executors"]["nss"]
print(e["agreed"], e["compared"])' "$out/compare-$name.json")"
  printf '%-40s %8s %8s\n' "$name" "$total" "$agreed"
  if [ "$agreed" != "$total" ]; then "$gen" compare "$ra" "$rb" --executor nss | grep -iE 'disagree|runs|fails' | head -20 || true; fi
  agreed_all=$((agreed_all + agreed)); total_all=$((total_all + total))
done
frac=$(awk -v a="$agreed_all" -v t="$total_all" 'BEGIN{printf "%.4f", t ? a / t : 0}')
echo "pooled agreement of the derived profile with the hidden one: $agreed_all/$total_all layers ($frac; required $min)"
awk -v a="$agreed_all" -v t="$total_all" -v m="$min" 'BEGIN{exit !(t > 0 && a / t >= m - 1e-9)}'
