#!/usr/bin/env bash
# The matrix HTML report in a real browser: torq_html_sample writes the
# sample reports into ARTIFACT_DIR, headless Chromium renders report.html at
# a 1,400-pixel window (the DOM after its script ran, with and without
# filter presets in the URL hash), each test's grid page and the report of
# a spec's first run, and takes screenshots; check_report.py asserts on the
# DOMs (against the sample's expected.json), junit.xml and summary.json.
# The files stay in ARTIFACT_DIR (report.png, report-full.png, grid.png).
#
# Usage: check_html_report.sh TORQ_HTML_SAMPLE ARTIFACT_DIR
set -euo pipefail
SAMPLE=$1
OUT=$2
HERE=$(cd "$(dirname "$0")" && pwd)
CHECK="/usr/bin/python3 $HERE/check_report.py"
CHROMIUM=/usr/bin/chromium
[ -x "$CHROMIUM" ] || { echo "FAIL: $CHROMIUM missing (Debian package chromium, ci/install-deps.sh)"; exit 1; }

rm -rf "$OUT"
mkdir -p "$OUT"
"$SAMPLE" "$OUT"
OUT=$(cd "$OUT" && pwd)
REPORT="$OUT/report.html"
EXPECTED="$OUT/expected.json"
URL="file://$OUT/report.html"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

chrome() {
  # No network, no profile state shared with anything else; the width the
  # report must fit.
  timeout 60 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
    --disable-background-networking --no-first-run --user-data-dir="$TMP/profile" --window-size=1400,1000 "$@" \
    2>>"$OUT/chromium.log"
}

status=0
# No external URL anywhere in the pages (self-contained, they open offline).
for page in "$REPORT" "$OUT/ops.html" "$OUT"/reports/*/grid.html "$OUT/first-run/report.html"; do
  if grep -Eq 'https?://|//cdn|@import' "$page"; then
    echo "FAIL: $page references an external URL:"; grep -Eno 'https?://[^"'"'"' )]*' "$page" | head; status=1
  fi
done

dom() {  # dom NAME HASH VISIBLE
  chrome --dump-dom "$URL$2" > "$OUT/dom-$1.html"
  $CHECK dom "$OUT/dom-$1.html" "$EXPECTED" "$3" || status=1
}
dom all "" all
dom resnet-failed-xpassed "#filter=resnet&outcome=failed,xpassed" "resnet18-bf16-sim-discover"
dom squeeze-any-case "#filter=SQUEEZE" "squeezenet1.0-fp32-sim-discover|squeezenet1.0-bf16-astra-run"
dom skipped "#outcome=skipped" "yolov8n-fp32-sim-discover|odd<&\"'>-fp32-sim-run"
dom escaped-filter "#filter=%3C%26" "odd<&\"'>-fp32-sim-run"
dom none "#outcome=" ""
dom heatmap-link "#filter=resnet18-fp32-" "resnet18-fp32-sim-discover|resnet18-fp32-astra-run"

for id in resnet18-fp32-sim-discover resnet18-bf16-sim-discover; do
  chrome --dump-dom "file://$OUT/reports/$id/grid.html" > "$OUT/dom-grid-$id.html"
  $CHECK grid "$OUT/dom-grid-$id.html" "$EXPECTED" "$id" || status=1
done
chrome --dump-dom "file://$OUT/ops.html" > "$OUT/dom-ops.html"
$CHECK ops "$OUT/dom-ops.html" "$EXPECTED" || status=1
chrome --dump-dom "file://$OUT/first-run/report.html" > "$OUT/dom-first-run.html"
$CHECK first "$OUT/dom-first-run.html" || status=1

$CHECK junit "$OUT/junit.xml" || status=1
$CHECK summary "$OUT/summary.json" || status=1

# Screenshots: the report as a 1,400 x 1,000 window shows it, the whole of
# it, and a grid page.
chrome --screenshot="$OUT/report.png" "$URL" >/dev/null
chrome --screenshot="$OUT/report-full.png" --window-size=1400,2600 "$URL" >/dev/null
chrome --screenshot="$OUT/grid.png" "file://$OUT/reports/resnet18-bf16-sim-discover/grid.html" >/dev/null
for png in report.png report-full.png grid.png; do
  size=$(stat -c %s "$OUT/$png" 2>/dev/null || echo 0)
  if [ "$size" -le 10240 ]; then echo "FAIL: screenshot $OUT/$png is $size bytes (want > 10 KB)"; status=1; fi
  if [ "$(head -c 8 "$OUT/$png" | od -An -tx1 | tr -d ' \n')" != "89504e470d0a1a0a" ]; then
    echo "FAIL: $OUT/$png is not a PNG"; status=1
  fi
done
echo "screenshots: $OUT/report.png, $OUT/report-full.png, $OUT/grid.png"
echo "report: $REPORT ($(stat -c %s "$REPORT") bytes; grid pages $(cat "$OUT"/reports/*/grid.html | wc -c) bytes)"
[ $status = 0 ] && echo "html report checks: ok" || echo "html report checks: FAILED"
exit $status
