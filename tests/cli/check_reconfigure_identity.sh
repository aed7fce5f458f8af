#!/usr/bin/env bash
# Issue 58, item 1: the same sources configured twice, first for the tools
# alone (README command 1: TORQ_TESTS=OFF), then again with the tests
# (command 2: TORQ_TESTS=ON), give the same engine identity, so the second
# build resumes every stored result. Before, TORQ_UNITY was read before its
# option() was declared: empty on the first configure, ON on the second.
# Usage: check_reconfigure_identity.sh SOURCE_DIR WORK_DIR
set -euo pipefail
src="$1"; work="$2"
rm -rf "$work" && mkdir -p "$work"
identity() {
  cmake --build "$work" --target torq_engine_identity_h >/dev/null
  grep -o 'torq-sim-[0-9a-f]*' "$work/generated/engine_identity.h"
}
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
cmake -S "$src" -B "$work" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DTORQ_TESTS=OFF >/dev/null
first=$(identity); first_build=$(cat "$work/generated/engine_build.txt")
cmake -S "$src" -B "$work" -DCMAKE_BUILD_TYPE=Release -DTORQ_TESTS=ON >/dev/null
second=$(identity); second_build=$(cat "$work/generated/engine_build.txt")
echo "tools-only configure: $first; reconfigured with the tests: $second"
if [ "$first" != "$second" ]; then
  echo "FAIL: the identity changed on a reconfigure of the same sources"
  diff <(echo "$first_build") <(echo "$second_build") || true
  exit 1
fi
echo "ok: the same identity"
