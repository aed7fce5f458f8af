#!/usr/bin/env bash
# Engine vs PyTorch latency on the four reference CNNs, measured in one run
# on this machine: fp32 and bf16, min of RUNS runs, THREADS threads.
# Needs python3-torch and python3-torchvision (ci/install-deps.sh --bench).
# Usage: tests/bench/engine_vs_torch.sh [BUILD_DIR] [RUNS] [THREADS]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/build}"; runs="${2:-10}"; threads="${3:-2}"
shared="${TORQ_SHARED_DIR:-$root/../shared}"
sim="$build/bin/torq-sim"
models=(squeezenet1.0 mobilenetv2 resnet18 efficientnet_b1)
[ -x "$sim" ] || { echo "bench: $sim not built (run ci/build.sh)"; exit 2; }
[ -d "$shared/models" ] || { echo "bench: $shared/models not found"; exit 2; }
/usr/bin/python3 -c 'import torch, torchvision' 2>/dev/null || { echo "bench: needs python3-torch python3-torchvision (ci/install-deps.sh --bench)"; exit 2; }

echo "== engine vs PyTorch: min of $runs runs, $threads threads, $(date -u +%FT%TZ) on $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 "$shared/tools/torch_baseline.py" --threads "$threads" --runs "$runs" "${models[@]}" > "$tmp/torch.txt"
for m in "${models[@]}"; do
  f32=$("$sim" run "$shared/models/$m/model.onnx" -t "$threads" --bench "$runs")
  b16=$("$sim" run "$shared/models/$m/model.onnx" -t "$threads" --bench "$runs" --numerics bf16 --rounding rne)
  load=$(echo "$f32" | sed -n 's/^host: load \([0-9.]*\) ms, first run \([0-9.]*\) ms/\1 \2/p')
  e32=$(echo "$f32" | sed -n 's/^bench: .* min \([0-9.]*\) ms.*/\1/p')
  e16=$(echo "$b16" | sed -n 's/^bench: .* min \([0-9.]*\) ms.*/\1/p')
  echo "$m $e32 $e16 $load" >> "$tmp/engine.txt"
done
printf '%-16s %10s %10s %7s | %10s %10s %7s | %9s %9s\n' model eng_fp32 torch_fp32 ratio eng_bf16 torch_bf16 ratio load_ms first_ms
status=0
while read -r m e32 e16 load first; do
  line=$(grep "^$m " "$tmp/torch.txt")
  t32=$(echo "$line" | sed -n 's/.*fp32_min_ms=\([0-9.]*\).*/\1/p')
  t16=$(echo "$line" | sed -n 's/.*bf16_min_ms=\([0-9.]*\).*/\1/p')
  r32=$(awk -v a="$e32" -v b="$t32" 'BEGIN{printf "%.2f", a/b}')
  r16=$(awk -v a="$e16" -v b="$t16" 'BEGIN{printf "%.2f", a/b}')
  printf '%-16s %10s %10s %7s | %10s %10s %7s | %9s %9s\n' "$m" "$e32" "$t32" "$r32" "$e16" "$t16" "$r16" "$load" "$first"
  awk -v r="$r32" 'BEGIN{exit !(r > 1.25)}' && { echo "  goal missed: fp32 ratio $r32 > 1.25"; status=1; }
  awk -v r="$r16" 'BEGIN{exit !(r > 1.5)}' && { echo "  goal missed: bf16 ratio $r16 > 1.5"; status=1; }
done < "$tmp/engine.txt"
echo "(ratio = engine / PyTorch, lower is better; goals: fp32 <= 1.25, bf16 <= 1.5; load = parse + plan)"
exit $status
