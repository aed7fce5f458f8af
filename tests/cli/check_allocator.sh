#!/usr/bin/env bash
# Which allocator a binary runs with, as the dynamic linker binds it: every
# binding of malloc, free and operator new (from the binary and from every
# library it loads, glibc's own calls included) must go to tcmalloc, or, with
# "other", none may (coordinator/CMakeLists.txt links tcmalloc into the
# coordinators only; the engine's job processes tune glibc's malloc).
# Usage: check_allocator.sh tcmalloc|other BINARY...
set -uo pipefail
want="$1"; shift
bad=0
for bin in "$@"; do
  # --help loads every library and returns; the linker logs each binding.
  log=$(LD_DEBUG=bindings LD_BIND_NOW=1 "$bin" --help 2>&1 >/dev/null)
  to=$(echo "$log" | sed -n "s/.* to \([^ ]*\) \[[0-9]*\]: normal symbol \`\(malloc\|free\|_Znwm\)'.*/\2 \1/p" | sort -u)
  if [ -z "$to" ]; then echo "allocator: $bin: no binding of malloc, free or operator new logged"; bad=1; continue; fi
  echo "$bin:"; echo "$to" | sed 's/^/  /'
  n_tc=$(echo "$to" | grep -c 'libtcmalloc_minimal\.so')
  n_all=$(echo "$to" | grep -c .)
  case "$want" in
    tcmalloc) [ "$n_tc" = "$n_all" ] || { echo "allocator: $bin: some bindings are not tcmalloc's"; bad=1; } ;;
    other) [ "$n_tc" = 0 ] || { echo "allocator: $bin: runs with tcmalloc"; bad=1; } ;;
    *) echo "allocator: want tcmalloc or other, not '$want'"; exit 2 ;;
  esac
done
[ "$bad" = 0 ] && echo "allocator: OK ($want)"
exit "$bad"
