#!/usr/bin/env bash
# A real matrix run's report.html in headless Chromium: the rendered DOM is
# checked against the run's own summary.json (rows, outcomes, grids,
# recommended cells) and a screenshot is left beside it (report.png).
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
    --disable-background-networking --no-first-run --user-data-dir="$TMP/profile" "$@" 2>>"$OUT/chromium.log"
}
chrome --dump-dom "file://$OUT/report.html" > "$OUT/report.dom.html"
/usr/bin/python3 "$HERE/check_report.py" real "$OUT/report.dom.html" "$OUT/summary.json" "$N"
chrome --screenshot="$OUT/report.png" --window-size=1400,1000 "file://$OUT/report.html#open=all" >/dev/null
size=$(stat -c %s "$OUT/report.png" 2>/dev/null || echo 0)
[ "$size" -gt 10240 ] || { echo "FAIL: screenshot $OUT/report.png is $size bytes"; exit 1; }
echo "screenshot: $OUT/report.png ($size bytes)"
