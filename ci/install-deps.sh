#!/usr/bin/env bash
# Installs every build and test dependency from Debian 12 packages.
# Usage: ci/install-deps.sh [--tools | --bench]
#   --tools only what building and running the tools needs (README command
#   1): no GoogleTest, ONNX test data, PyTorch, Chromium or sshd, which only
#   the tests use.
#   --bench also installs the peers of tests/bench, for benchmarks only (never
#   a build or test dependency): OpenBLAS for PyTorch, and ONNX Runtime from
#   npm (onnxruntime-node, pinned in tests/bench/package.json and its lock
#   file) into tests/bench/node_modules, with node/npm from Debian when the
#   machine has none.
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
# Building and running the tools.
PKGS=(
  build-essential cmake ninja-build ccache pkg-config
  libzmq3-dev cppzmq-dev libflatbuffers-dev flatbuffers-compiler
  libonnx-dev libprotobuf-dev protobuf-compiler
  librocksdb-dev libyaml-cpp-dev libdnnl-dev
  nlohmann-json3-dev libcli11-dev libssl-dev
  libgoogle-perftools-dev   # tcmalloc, the coordinators' allocator (coordinator/CMakeLists.txt)
  ocl-icd-opencl-dev
  openssh-client            # worker/board: ssh/scp to boards
)
# The tests (and the model zoo, which exports torchvision models).
if [ "${1:-}" != "--tools" ]; then
  PKGS+=(
    libgtest-dev
    libonnx-testdata
    python3-torch python3-torchvision python3-onnx
    chromium
    python3-prometheus-client   # tests/observe: /metrics read by Prometheus's own Python parser
    openssh-server          # tests/board start an sshd playing the board
  )
fi
if [ "${1:-}" = "--bench" ]; then
  # PyTorch is the peer of tests/bench; OpenBLAS gives it Debian's fastest
  # BLAS (with the reference BLAS its fp32 convolutions are ~10x slower,
  # which would flatter the engine).
  PKGS+=(libopenblas0-pthread)
  # tests/bench/scale_bench.sh counts the store's done jobs after a SIGKILL
  # with RocksDB's own ldb, not with the coordinator it checks.
  PKGS+=(rocksdb-tools)
  # ONNX Runtime's peer runs under node; a node already on the machine (e.g.
  # a newer one from another apt source) is used as it is.
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then PKGS+=(nodejs npm); fi
fi
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PKGS[@]} packages present"
else
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

if [ "${1:-}" = "--bench" ]; then
  # onnxruntime-node ships the native ONNX Runtime (CPU provider) for this
  # platform. Its postinstall would fetch the CUDA provider from NuGet by
  # default on linux/x64: ONNXRUNTIME_NODE_INSTALL=skip, the bench is CPU only.
  bench="$(cd "$(dirname "$0")/.." && pwd)/tests/bench"
  want=$(node -p "require('$bench/package.json').dependencies['onnxruntime-node']")
  if node -e "const p = require('$bench/node_modules/onnxruntime-node/package.json');
              if (p.version !== '$want') process.exit(1);
              require('$bench/node_modules/onnxruntime-node');" 2>/dev/null; then
    echo "install-deps: onnxruntime-node $want present in $bench/node_modules"
  else
    echo "install-deps: installing onnxruntime-node $want into $bench/node_modules (npm ci)"
    (cd "$bench" && ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund)
    node -e "require('$bench/node_modules/onnxruntime-node')"
  fi
fi
