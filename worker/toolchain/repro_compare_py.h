// compare.py of a repro bundle (repro_bundle.h): DESIGN §4's comparison of
// raw outputs with the reference, in plain Python 3 (no numpy), so a bundle
// runs wherever the tools do.
#pragma once

namespace torq::toolchain {

inline constexpr const char* kReproComparePy = R"PY(#!/usr/bin/env python3
"""Compares an executor's raw outputs with the fp32 host reference (torq-farm).

usage: compare.py --fp-max-tol T --allowed-wrong A TYPE:EXPECTED:ACTUAL...
TYPE is IREE's tensor type (1x3x224x224xf32). A float output passes when at
most A of its elements have |e-o| / (|e|+|o|+1e-6) > T (NaN/Inf must sit at
the same positions); an integer output when every |e-o| <= 1. Exit 0: every
output passes ("status: success"); 1: one does not ("status: difference");
2: a file is missing or has the wrong size.
"""
import math
import struct
import sys

FORMATS = {'f32': ('f', 4), 'f64': ('d', 8), 'f16': ('e', 2), 'bf16': ('H', 2), 'i8': ('b', 1),
           'ui8': ('B', 1), 'i16': ('h', 2), 'ui16': ('H', 2), 'i32': ('i', 4), 'ui32': ('I', 4),
           'i64': ('q', 8), 'ui64': ('Q', 8), 'i1': ('B', 1)}
FLOATS = ('f32', 'f64', 'f16', 'bf16')


def read(path, dtype, count):
    try:
        with open(path, 'rb') as f:
            data = f.read()
    except OSError as e:
        print(f"status: error (bundle): {path}: {e.strerror}")
        sys.exit(2)
    if dtype == 'bf16' and len(data) == 4 * count:
        dtype = 'f32'  # an executor that widens bf16 to f32 (nss MatMul)
    fmt, size = FORMATS[dtype]
    if len(data) != size * count:
        print(f"status: error (bundle): {path}: {len(data)} bytes, expected {size * count} ({count} x {dtype})")
        sys.exit(2)
    values = struct.unpack('<%d%s' % (count, fmt), data)
    if dtype == 'bf16':
        values = [struct.unpack('<f', struct.pack('<I', v << 16))[0] for v in values]
    return values


def main(argv):
    tol, allowed, specs = 0.01, 0.0, []
    i = 0
    while i < len(argv):
        if argv[i] == '--fp-max-tol':
            tol = float(argv[i + 1]); i += 2
        elif argv[i] == '--allowed-wrong':
            allowed = float(argv[i + 1]); i += 2
        else:
            specs.append(argv[i]); i += 1
    passed = True
    for k, spec in enumerate(specs):
        ttype, expected_path, actual_path = spec.split(':', 2)
        parts = ttype.split('x')
        dtype, dims = parts[-1], [int(d) for d in parts[:-1]]
        count = 1
        for d in dims:
            count *= d
        e = read(expected_path, dtype, count)
        o = read(actual_path, dtype, count)
        if dtype in FLOATS:
            over, max_abs, max_rel, bad_special = 0, 0.0, 0.0, 0
            for a, b in zip(e, o):
                if not (math.isfinite(a) and math.isfinite(b)):
                    same = (math.isnan(a) and math.isnan(b)) or a == b
                    bad_special += 0 if same else 1
                    continue
                diff = abs(a - b)
                rel = diff / (abs(a) + abs(b) + 1e-6)
                max_abs, max_rel = max(max_abs, diff), max(max_rel, rel)
                over += rel > tol
            ok = bad_special == 0 and (over / count if count else 0.0) <= allowed
            print(f"output {k} ({ttype}): max_abs {max_abs:.6g}, max_rel {max_rel:.6g}, "
                  f"{over} of {count} over {tol:g}, {bad_special} NaN/Inf mismatches: {'ok' if ok else 'DIFFERS'}")
        else:
            worst = max((abs(a - b) for a, b in zip(e, o)), default=0)
            ok = worst <= 1
            print(f"output {k} ({ttype}): max |e-o| {worst}: {'ok' if ok else 'DIFFERS'}")
        passed = passed and ok
    print("status: success" if passed else "status: difference (the executor's outputs are out of tolerance)")
    return 0 if passed else 1


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
)PY";

}  // namespace torq::toolchain
