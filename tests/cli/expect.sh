#!/usr/bin/env bash
# Runs a command and checks its exit code and that its combined output
# matches a regular expression.
# Usage: expect.sh EXIT_CODE REGEX COMMAND [ARGS...]
set -uo pipefail
want_rc="$1"; regex="$2"; shift 2
out=$("$@" 2>&1)
rc=$?
echo "$out" | tail -n 40
if [ "$rc" != "$want_rc" ]; then echo "expect: exit code $rc, wanted $want_rc"; exit 1; fi
if ! echo "$out" | grep -Eq -- "$regex"; then echo "expect: output does not match /$regex/"; exit 1; fi
echo "expect: OK (exit $rc, output matches /$regex/)"
