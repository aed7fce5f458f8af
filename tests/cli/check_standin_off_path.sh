#!/usr/bin/env bash
# The stand-in personas are not on the user's PATH (issue 29): build/bin
# holds no torq-compile, torq-run-module or torq-import-onnx (a user who
# puts build/bin on PATH keeps a real Torq toolchain), and build/standin's
# symlinks play the tools when called by those names.
# Usage: check_standin_off_path.sh BIN_DIR STANDIN_DIR MODEL.onnx
set -euo pipefail
bin="$1"; standin="$2"; model="$3"
for t in torq-compile torq-run-module torq-import-onnx; do
  if [ -e "$bin/$t" ] || [ -L "$bin/$t" ]; then echo "FAIL: $bin/$t exists: it would shadow a real $t"; exit 1; fi
  [ -x "$standin/$t" ] || { echo "FAIL: $standin/$t missing"; exit 1; }
done
if PATH="$bin:/usr/bin:/bin" command -v torq-compile >/dev/null; then
  echo "FAIL: torq-compile found on a PATH of $bin"; exit 1
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$standin/torq-import-onnx" "$model" -o "$tmp/m.mlir"
grep -q 'torch.operator "onnx.Conv"' "$tmp/m.mlir" || { echo "FAIL: the import persona wrote no Conv"; exit 1; }
"$standin/torq-compile" "$tmp/m.mlir" -o "$tmp/m.vmfb" --torq-hw=SL2610 --torq-disable-slices --torq-disable-css
if "$standin/torq-compile" "$tmp/m.mlir" -o "$tmp/m.vmfb" --torq-hw=sl2610 2>"$tmp/err"; then
  echo "FAIL: the stand-in compile took --torq-hw=sl2610"; exit 1
fi
grep -q "expects a valid hardware name" "$tmp/err" || { echo "FAIL: $(cat "$tmp/err")"; exit 1; }
echo "stand-in: off the PATH of $bin, in $standin, refusing what the real tools refuse"
