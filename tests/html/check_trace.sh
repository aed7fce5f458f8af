#!/usr/bin/env bash
# The profile trace JSON in a real browser: torq_trace_sample writes the
# sim's profile CSVs of a sample model, the trace JSON made from them and a
# page that loads trace.json (JSON.parse), checks every event and prints a
# summary into its DOM; headless Chromium renders the page and the summary
# must equal the one counted in C++ (expected.txt), status=ok included.
# The files stay in ARTIFACT_DIR (trace.json opens in ui.perfetto.dev).
#
# Usage: check_trace.sh TORQ_TRACE_SAMPLE ARTIFACT_DIR
set -euo pipefail
SAMPLE=$1
OUT=$2
CHROMIUM=/usr/bin/chromium
[ -x "$CHROMIUM" ] || { echo "FAIL: $CHROMIUM missing (Debian package chromium, ci/install-deps.sh)"; exit 1; }

rm -rf "$OUT"
mkdir -p "$OUT"
"$SAMPLE" "$OUT"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

URL="file://$(cd "$OUT" && pwd)/trace.html"
timeout 60 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
  --disable-background-networking --no-first-run --allow-file-access-from-files \
  --user-data-dir="$TMP/profile" --dump-dom "$URL" > "$OUT/dom.html" 2>>"$OUT/chromium.log"

# The text of <pre id="summary">, entities decoded.
sed -n '/<pre id="summary">/,/<\/pre>/p' "$OUT/dom.html" \
  | sed -e 's/.*<pre id="summary">//' -e 's/<\/pre>.*//' -e 's/&lt;/</g' -e 's/&gt;/>/g' -e 's/&amp;/\&/g' \
  | sed '/^$/d' > "$OUT/summary.txt"

cat "$OUT/overview.txt"
if ! diff -u "$OUT/expected.txt" "$OUT/summary.txt"; then
  echo "FAIL: the browser's summary of trace.json differs from the expected one (above; DOM in $OUT/dom.html)"
  exit 1
fi
echo "ok: $(head -1 "$OUT/summary.txt"), $(grep -c '^track ' "$OUT/summary.txt") tracks, read by Chromium from $OUT/trace.json"
