#!/usr/bin/env bash
# The matrix HTML report in a real browser: torq_html_sample writes the
# sample reports into ARTIFACT_DIR, headless Chromium renders report.html
# (the DOM after its script ran, with and without filter presets in the URL
# hash) and takes a screenshot, and check_report.py asserts on the DOM,
# junit.xml and summary.json. The files stay in ARTIFACT_DIR.
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
REPORT="$OUT/report.html"
URL="file://$(cd "$OUT" && pwd)/report.html"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

chrome() {
  # No network, no profile state shared with anything else.
  timeout 60 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
    --disable-background-networking --no-first-run --user-data-dir="$TMP/profile" "$@" 2>>"$OUT/chromium.log"
}

# No external URL anywhere in the file (self-contained, works offline).
if grep -Eq 'https?://|//cdn|@import' "$REPORT"; then
  echo "FAIL: $REPORT references an external URL:"; grep -Eno 'https?://[^"'"'"' )]*' "$REPORT" | head; exit 1
fi

status=0
dom() {  # dom NAME HASH VISIBLE [open]
  chrome --dump-dom "$URL$2" > "$OUT/dom-$1.html"
  $CHECK dom "$OUT/dom-$1.html" "${@:3}" || status=1
}
dom all "" all
dom resnet-failed-xpassed "#filter=resnet&outcome=failed,xpassed" "resnet18-bf16-sim-discover"
dom squeeze-any-case "#filter=SQUEEZE" "squeezenet1.0-fp32-sim-discover|squeezenet1.0-bf16-astra-run"
dom skipped "#outcome=skipped" "yolov8n-fp32-sim-discover|odd<&\"'>-fp32-sim-run"
dom escaped-filter "#filter=%3C%26" "odd<&\"'>-fp32-sim-run"
dom none "#outcome=" ""
dom resnet-open "#filter=resnet&open=all" "resnet18-fp32-sim-discover|resnet18-bf16-sim-discover" open

$CHECK junit "$OUT/junit.xml" || status=1
$CHECK summary "$OUT/summary.json" || status=1

# Screenshots: every test with the grids open, and the resnet tests only.
chrome --screenshot="$OUT/report.png" --window-size=1400,1000 "$URL#open=all" >/dev/null
chrome --screenshot="$OUT/report-resnet.png" --window-size=1400,1000 "$URL#filter=resnet&open=all" >/dev/null
size=$(stat -c %s "$OUT/report.png" 2>/dev/null || echo 0)
if [ "$size" -le 10240 ]; then echo "FAIL: screenshot $OUT/report.png is $size bytes (want > 10 KB)"; status=1; fi
if [ "$(head -c 8 "$OUT/report.png" | od -An -tx1 | tr -d ' \n')" != "89504e470d0a1a0a" ]; then
  echo "FAIL: $OUT/report.png is not a PNG"; status=1
fi
echo "screenshot: $OUT/report.png ($size bytes), $OUT/report-resnet.png"
echo "report: $REPORT"
[ $status = 0 ] && echo "html report checks: ok" || echo "html report checks: FAILED"
exit $status
