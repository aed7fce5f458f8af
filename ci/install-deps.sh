#!/usr/bin/env bash
# Installs every build and test dependency from Debian 12 packages.
# Usage: ci/install-deps.sh [--bench]   (--bench adds OpenBLAS for the PyTorch peer of tests/bench)
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
PKGS=(
  build-essential cmake ccache pkg-config
  libzmq3-dev cppzmq-dev libflatbuffers-dev flatbuffers-compiler
  libonnx-dev libprotobuf-dev protobuf-compiler
  librocksdb-dev libyaml-cpp-dev libgtest-dev libdnnl-dev
  nlohmann-json3-dev libcli11-dev libssl-dev
  ocl-icd-opencl-dev
  libonnx-testdata
  python3-torch python3-torchvision python3-onnx
  chromium
  openssh-server openssh-client   # worker/board: ssh/scp to boards; tests/board start an sshd
)
if [ "${1:-}" = "--bench" ]; then
  # PyTorch is the peer of tests/bench; OpenBLAS gives it Debian's fastest
  # BLAS (with the reference BLAS its fp32 convolutions are ~10x slower,
  # which would flatter the engine).
  PKGS+=(libopenblas0-pthread)
fi
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PKGS[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
