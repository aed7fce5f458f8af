#!/usr/bin/env bash
# Builds the model zoo the nightly and push specs run on: torchvision
# architectures exported to ONNX with seeded random (trained-like) weights
# and a PyTorch fp32 reference output each, in the ONNX backend-test layout
#
#   OUT_DIR/<model>/model.onnx
#   OUT_DIR/<model>/test_data_set_0/input_0.pb, output_0.pb
#   OUT_DIR/<model>/zoo-stamp.json   cache key, export time, op types
#
# at opsets 11..17 (the list, sizes and opsets: tests/models/export_torchvision.py,
# ZOO). Nothing is downloaded: the weights are random. Each model is built
# once: its stamp is keyed by the exporter's content and the torch,
# torchvision and onnx versions, so a second run only checks the stamps
# (well under a second) and re-exports what changed.
#
# Usage: ci/make-zoo.sh [OUT_DIR] [--only NAME...] [--list]
#   OUT_DIR  default build/zoo (configs/nightly.yaml and push.yaml read build/zoo)
#   --only   build these models only
#   --list   the models, their opset and input size, and whether built
# Needs Debian's python3-torch, python3-torchvision and python3-onnx for
# /usr/bin/python3 (ci/install-deps.sh installs them); pyenv's or a venv's
# python would export with another torch.
# Exit: 0 built (or cached), 1 an export failed, 2 bad usage or missing deps.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=build/zoo
args=()
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then OUT=$1; shift; fi
for a in "$@"; do
  case "$a" in
    --only|--list) args+=("$a") ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "make-zoo: unknown option $a (usage: ci/make-zoo.sh [OUT_DIR] [--only NAME...] [--list])" >&2; exit 2 ;;
    *) args+=("$a") ;;
  esac
done
PY=/usr/bin/python3
EXPORTER=tests/models/export_torchvision.py
if [[ " ${args[*]} " == *" --list "* ]]; then
  exec "$PY" "$EXPORTER" "$OUT" --zoo "${args[@]}"   # reads the stamps only: no torch needed
fi
if ! "$PY" -c 'import importlib.util as u, sys; sys.exit(any(u.find_spec(m) is None for m in ("torch", "torchvision", "onnx")))' 2>/dev/null; then
  echo "make-zoo: $PY cannot find torch, torchvision and onnx: run ci/install-deps.sh" \
       "(python3-torch python3-torchvision python3-onnx)" >&2
  exit 2
fi
mkdir -p "$OUT"
# One build of a zoo at a time (ci/nightly.sh, a ctest and a user may start
# one together): the second waits for the first, then finds its models built.
exec 9>"$OUT/.lock"
flock 9
exec "$PY" "$EXPORTER" "$OUT" --zoo "${args[@]}"
