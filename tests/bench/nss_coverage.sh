#!/usr/bin/env bash
# nss coverage of the reference CNNs in fp32, bf16 and int8 (issue 12): for
# each model, `torq-gen-config discover` on the three dtypes (fp32 as is,
# --auto-convert-bf16, --quantize [--per-channel]) with 2 local workers, and
# per dtype: layers, layers whose nss result is success/difference (runs),
# layers recommended on nss, and for int8 the quantization's graph-output
# PCC against fp32 (quantize's own report). Prints one table.
# Usage: tests/bench/nss_coverage.sh [BUILD_DIR] [MODEL...]
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}; shift || true
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(squeezenet1.0 mobilenetv2 resnet18 efficientnet_b1)
gen="$build/bin/torq-gen-config"
work=$(mktemp -d /tmp/nss-coverage.XXXXXX)
trap 'rm -rf "$work"' EXIT

count() {  # report.json -> "layers nss_runs nss_recommended"
  python3 - "$1" <<'PY'
import json, sys
ops = json.load(open(sys.argv[1]))["ops"]
runs = sum(1 for o in ops.values() if o["executors"].get("nss", {}).get("status") in ("success", "difference"))
rec = sum(1 for o in ops.values() if o.get("recommended_executor") == "nss")
print(len(ops), runs, rec)
PY
}

printf '%-16s %-8s %7s %9s %9s %10s %8s\n' model dtype layers nss_runs on_nss coverage pcc_fp32
for m in "${models[@]}"; do
  model="$here/../shared/models/$m/model.onnx"
  for dt in fp32 bf16 int8 int8-pc; do
    out="$work/$m-$dt"
    case $dt in
      fp32) args=(); name=$m ;;
      bf16) args=(--auto-convert-bf16); name=$m ;;
      int8) args=(--quantize); name=${m}_quant ;;
      int8-pc) args=(--quantize --per-channel); name=${m}_quant ;;
    esac
    log="$out.log"
    start=$(date +%s.%N)
    "$gen" discover --model "$model" -o "$out" --workers 2 "${args[@]}" >"$log" 2>&1 || [ $? -eq 1 ]
    secs=$(python3 -c "import time,sys; print(f'{time.time()-float(sys.argv[1]):.1f}')" "$start")
    read -r layers runs rec < <(count "$out/torq_gen_config_$name.json")
    pcc=$(sed -n 's/^graph outputs vs fp32.*PCC \([0-9.e-]*\),.*/\1/p' "$log")
    printf '%-16s %-8s %7s %9s %9s %9.1f%% %8s  (%ss)\n' "$m" "$dt" "$layers" "$runs" "$rec" \
      "$(python3 -c "print(100*$rec/$layers)")" "${pcc:--}" "$secs"
  done
done
