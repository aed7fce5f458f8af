#!/usr/bin/env bash
# A real matrix run's report.html in headless Chromium at a 1,400-pixel
# window: the rendered DOM is checked against the run's own summary.json
# (rows, outcomes, charts, no layer inlined, the width it needs) and so is
# each test's grid page beside it (cells, recommended cells); one grid page
# is rendered too, and screenshots are left beside them (report.png,
# grid.png).
# Usage: check_real_report.sh EXPORT_DIR N_EXECUTORS
set -euo pipefail
OUT=$(cd "$1" && pwd)
N=$2
HERE=$(cd "$(dirname "$0")" && pwd)
CHROMIUM=/usr/bin/chromium
[ -x "$CHROMIUM" ] || { echo "FAIL: $CHROMIUM missing (Debian package chromium, ci/install-deps.sh)"; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
chrome() {
  timeout 60 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
    --disable-background-networking --no-first-run --user-data-dir="$TMP/profile" --window-size=1400,1000 "$@" \
    2>>"$OUT/chromium.log"
}
chrome --dump-dom "file://$OUT/report.html" > "$OUT/report.dom.html"
/usr/bin/python3 "$HERE/check_report.py" real "$OUT/report.dom.html" "$OUT/summary.json" "$N"
GRID=$(ls "$OUT"/reports/*/grid.html | head -1)
chrome --dump-dom "file://$GRID" > "$OUT/grid.dom.html"
grep -q 'data-ready="1"' "$OUT/grid.dom.html" || { echo "FAIL: $GRID: its script did not run"; exit 1; }
chrome --screenshot="$OUT/report.png" "file://$OUT/report.html" >/dev/null
chrome --screenshot="$OUT/grid.png" "file://$GRID" >/dev/null
size=$(stat -c %s "$OUT/report.png" 2>/dev/null || echo 0)
[ "$size" -gt 10240 ] || { echo "FAIL: screenshot $OUT/report.png is $size bytes"; exit 1; }
echo "screenshot: $OUT/report.png ($size bytes), $OUT/grid.png; report.html $(stat -c %s "$OUT/report.html") bytes"
