#!/usr/bin/env bash
# Issue 60, finding 5: a FIFO (or a directory, or a device) where a model,
# a spec, a test config or an output file is expected is refused at once
# with its kind named, by every command that opens one. Before, opening a
# FIFO blocked in open(): discover, run, quantize and `torq-sim run` hung,
# `validate` accepted the spec, and the coordinator ignored SIGTERM (its
# prepare thread was blocked and main joined it).
# Usage: check_fifo_inputs.sh BIN_DIR DEMO_MODEL WORK_DIR
set -uo pipefail
bin="$1"; demo="$2"; work="$3"
rm -rf "$work" && mkdir -p "$work"
fifo="$work/model.onnx"
mkfifo "$fifo"
mkdir "$work/dir.onnx"
out="$work/out"
failures=0

# check WANT_RC REGEX COMMAND...: the command must end by itself within 10 s
# (killed at 20 s), with WANT_RC and output matching REGEX.
check() {
  local want="$1" regex="$2"; shift 2
  local start end rc text
  start=$(date +%s%N)
  text=$(timeout -s KILL 20 "$@" 2>&1 </dev/null)
  rc=$?
  end=$(date +%s%N)
  local ms=$(( (end - start) / 1000000 ))
  if [ "$rc" = 137 ]; then
    echo "FAIL (hung, killed after 20 s): $*"; failures=$((failures + 1)); return
  fi
  if [ "$rc" != "$want" ] || ! grep -Eq -- "$regex" <<<"$text" || [ "$ms" -gt 10000 ]; then
    echo "FAIL: $* -> exit $rc in $ms ms (wanted $want, /$regex/, < 10 s):"
    tail -n 5 <<<"$text"
    failures=$((failures + 1)); return
  fi
  echo "ok ($ms ms, exit $rc): $*"
}

fifo_said="model.onnx: cannot open model: is a FIFO \(named pipe\), not a regular file"
check 2 "$fifo_said" "$bin/torq-gen-config" discover --model "$fifo" --output-dir "$out"
check 2 "$fifo_said" "$bin/torq-gen-config" run --model "$fifo" --output-dir "$out"
check 2 "$fifo_said" "$bin/torq-gen-config" quantize --model "$fifo" --output-dir "$out"
check 2 "$fifo_said" "$bin/torq-gen-config" repro --model "$fifo" --executor nss --output-dir "$out" 0
check 2 "dir.onnx: cannot open model: is a directory, not a regular file" \
  "$bin/torq-gen-config" discover --model "$work/dir.onnx" --output-dir "$out"
check 2 "/dev/zero: cannot open model: is a character device, not a regular file" \
  "$bin/torq-gen-config" run --model /dev/zero --output-dir "$out"
check 2 "model.onnx: cannot open: is a FIFO \(named pipe\), not a regular file" "$bin/torq-sim" run "$fifo"
check 2 "$fifo_said" "$bin/torq-coordinator" --model "$fifo" --export "$out" --db "$work/db"

# Outputs: a FIFO where a file is written is refused, not opened for writing
# (which blocks until something reads it).
mkfifo "$work/out.onnx" "$work/run.log"
check 2 "out.onnx: cannot write: is a FIFO \(named pipe\), not a regular file" \
  "$bin/torq-gen-config" quantize --model "$demo" --output "$work/out.onnx" --no-measure
check 2 "run.log: cannot open log file: is a FIFO \(named pipe\), not a regular file" \
  "$bin/torq-gen-config" run --model "$demo" --output-dir "$out" --log-file "$work/run.log"
check 2 "out.onnx: cannot write: is a FIFO \(named pipe\), not a regular file" \
  "$bin/torq-sim" demo --save "$work/out.onnx"

# A spec that names a FIFO as its model: validate refuses it with the
# spec's file:line:col, and the coordinator stops before any thread opens it.
cat > "$work/spec.yaml" <<EOF
models:
  - model.onnx
variants: [fp32]
executors: [host]
targets:
  sim: {}
modes: [discover]
EOF
spec_said="spec.yaml:2:[0-9]+: model file '.*model.onnx' is a FIFO \(named pipe\), not a regular file"
check 1 "$spec_said" "$bin/torq-coordinator" validate "$work/spec.yaml"
check 2 "$spec_said" "$bin/torq-coordinator" --spec "$work/spec.yaml" --local-workers 1 --export "$out" --db "$work/db"
# The spec itself a FIFO.
mkfifo "$work/fifo.yaml"
check 2 "fifo.yaml: cannot open: is a FIFO \(named pipe\), not a regular file" \
  "$bin/torq-coordinator" validate "$work/fifo.yaml"
check 2 "fifo.yaml: cannot open: is a FIFO \(named pipe\), not a regular file" \
  "$bin/torq-coordinator" --spec "$work/fifo.yaml" --local-workers 1 --export "$out" --db "$work/db"

if [ "$failures" -ne 0 ]; then echo "check_fifo_inputs: $failures failure(s)"; exit 1; fi
echo "check_fifo_inputs: every FIFO, directory and device refused at once"
