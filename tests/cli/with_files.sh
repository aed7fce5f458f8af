#!/usr/bin/env bash
# Writes input files into a fresh directory, then checks a command as
# expect.sh does (exit code and a regular expression on its output).
# Usage: with_files.sh DIR NAME=TEXT... -- EXIT_CODE REGEX COMMAND [ARGS...]
# DIR is emptied first; TEXT is printf %b text ("\n" is a newline).
set -uo pipefail
dir="$1"; shift
rm -rf "$dir" && mkdir -p "$dir" || { echo "with_files: cannot make $dir"; exit 1; }
while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do
  name="${1%%=*}"; text="${1#*=}"; shift
  printf '%b' "$text" > "$dir/$name" || { echo "with_files: cannot write $dir/$name"; exit 1; }
done
[ "${1:-}" = "--" ] || { echo "with_files: no -- before the expected exit code"; exit 1; }
shift
exec "$(dirname "$0")/expect.sh" "$@"
