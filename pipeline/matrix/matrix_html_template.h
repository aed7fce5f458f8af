// The fixed parts of the matrix HTML pages (matrix_html.cc, report.html;
// matrix_html_grid.cc, a test's grid page): inline stylesheets and scripts.
// Self-contained: no external URL, font or image.
//
// report.html's script
//  - filters `tr.test` rows by a case-insensitive substring of `data-id`
//    (#filter) and by the checked outcome boxes (input.outcome-toggle);
//    rows filtered out get the `hidden` attribute;
//  - reads presets from the URL hash, "#filter=resnet&outcome=failed,xpassed"
//    (URLSearchParams syntax; a missing key leaves that control as it is),
//    which the heatmap's cells and the bars' labels link to;
// the grid page's script shows a grid cell's metrics (its title) in
// #detail-panel on click. Both set on <body>, once they have run:
// data-ready="1" (a headless browser test can tell that the DOM it dumps
// is the final one), data-scroll-width (the page's width as laid out, to
// check that it fits the window) and data-ready-ms (milliseconds from the
// start of navigation).
#pragma once

namespace torq::pipeline::matrix::html_template {

// Both pages.
inline constexpr const char* kStyle = R"CSS(
:root { --pass: #2e7d32; --fail: #c62828; --skip: #757575; --xfail: #6a5acd; --xpass: #ef6c00;
        --ok-bg: #c8e6c9; --diff-bg: #ffe082; --err-bg: #ef9a9a; --absent-bg: #e0e0e0;
        --nss: #1565c0; --css: #00897b; --host: #8d6e63; --none: #c62828; --other: #9e9e9e; }
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #212121; }
h1 { font-size: 1.4em; margin: 0 0 .4em; overflow-wrap: anywhere; }
h2 { font-size: 1.15em; margin: 1.4em 0 .5em; }
dl.run { display: grid; grid-template-columns: max-content auto; gap: .1em 1em; margin: 0 0 .8em; }
dl.run dt { font-weight: 600; } dl.run dd { margin: 0; font-family: monospace; overflow-wrap: anywhere; }
ul.counts { list-style: none; padding: 0; display: flex; gap: .6em; flex-wrap: wrap; }
ul.counts li { padding: .2em .7em; border-radius: 1em; color: #fff; font-weight: 600; }
.outcome-passed .badge, ul.counts li.outcome-passed { background: var(--pass); }
.outcome-failed .badge, ul.counts li.outcome-failed { background: var(--fail); }
.outcome-skipped .badge, ul.counts li.outcome-skipped { background: var(--skip); }
.outcome-xfailed .badge, ul.counts li.outcome-xfailed { background: var(--xfail); }
.outcome-xpassed .badge, ul.counts li.outcome-xpassed { background: var(--xpass); }
.badge { color: #fff; padding: .05em .5em; border-radius: .8em; font-weight: 600; }
table { border-collapse: collapse; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: .2em .4em; text-align: left; vertical-align: top; }
th { background: #f5f5f5; position: sticky; top: 0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.status-success { background: var(--ok-bg); }
.status-difference { background: var(--diff-bg); }
.status-error { background: var(--err-bg); }
.status-absent { background: var(--absent-bg); color: #777; }
.status-mixed { background: repeating-linear-gradient(45deg, var(--ok-bg), var(--ok-bg) 6px,
                                                     var(--err-bg) 6px, var(--err-bg) 12px); }
.legend span { display: inline-block; padding: 0 .5em; margin-right: .4em; border: 1px solid #ccc; }
.sr-only { position: absolute; width: 1px; height: 1px; padding: 0; margin: -1px; overflow: hidden;
           clip: rect(0, 0, 0, 0); white-space: nowrap; border: 0; }
)CSS";

// report.html: the matrix table lays out in the window's width (fixed
// layout, long text wraps) so that it never scrolls sideways.
inline constexpr const char* kReportStyle = R"CSS(
#controls { margin: .8em 0; display: flex; gap: 1em; align-items: center; flex-wrap: wrap; }
#filter { width: 22em; padding: .25em .4em; }
#shown { color: #555; }
table.fit { table-layout: fixed; width: 100%; }
table.fit td, table.fit th { overflow-wrap: anywhere; }
td.id { font-family: monospace; font-size: 12px; }
td.msg { white-space: pre-wrap; font-size: 12px; }
td.enum { font-size: 11px; }
td.since { font-size: 12px; }
td.below { color: var(--fail); font-weight: 600; }
td.layers small { display: block; color: var(--fail); }
tr.test:hover { background: #fafafa; }
tr.changed td:first-child { box-shadow: inset 4px 0 0 var(--change); }
tr.changed { --change: #9e9e9e; }
tr.change-new-failure { --change: var(--fail); background: #ffebee; }
tr.change-fixed { --change: var(--pass); background: #e8f5e9; }
tr.change-outcome { --change: var(--xpass); background: #fff3e0; }
tr.change-drift { --change: #f9a825; background: #fffde7; }
tr.change-new-test { --change: #1565c0; background: #e3f2fd; }
.change-badge { display: inline-block; font-size: 11px; font-weight: 700; color: #fff; background: var(--change);
                padding: 0 .4em; border-radius: .6em; margin-right: .3em; }
#changes ul { padding-left: 1.2em; } #changes li { margin: .2em 0; --change: #9e9e9e; }
#changes li.change-new-failure { --change: var(--fail); } #changes li.change-fixed { --change: var(--pass); }
#changes li.change-outcome { --change: var(--xpass); } #changes li.change-drift { --change: #f9a825; }
#changes li.change-new-test { --change: #1565c0; }
#changes a { font-family: monospace; font-size: 12px; }
.charts { display: flex; flex-wrap: wrap; gap: 1.5em 3em; align-items: flex-start; }
figure.chart { margin: 0; max-width: 100%; }
figure.chart svg { max-width: 100%; height: auto; display: block; }
figure.chart figcaption { font-size: 12px; color: #444; max-width: 44em; margin-top: .3em; }
svg.chart text { font: 12px system-ui, sans-serif; fill: #212121; }
svg.chart text.light { fill: #fff; }
svg.chart text.axis { fill: #666; font-size: 11px; }
svg.chart .grid-line { stroke: #e0e0e0; }
.heat-absent { fill: #f5f5f5; stroke: #e0e0e0; } .heat-no-layers { fill: #d6d6d6; }
.swatch { display: inline-block; width: 1em; height: .8em; vertical-align: middle; margin: 0 .2em 0 .6em;
          border: 1px solid #bbb; }
.swatch.scale { width: 6em; background: linear-gradient(90deg, rgb(255,247,188), rgb(35,139,69)); }
.swatch.heat-absent { background: #f5f5f5; } .swatch.heat-no-layers { background: #d6d6d6; }
.seg-nss { fill: var(--nss); background: var(--nss); } .seg-css { fill: var(--css); background: var(--css); }
.seg-host { fill: var(--host); background: var(--host); } .seg-none { fill: var(--none); background: var(--none); }
.seg-other { fill: var(--other); background: var(--other); }
.line-passed { stroke: var(--pass); fill: none; stroke-width: 2; } .point-passed { fill: var(--pass); }
.line-coverage { stroke: var(--nss); fill: none; stroke-width: 2; stroke-dasharray: 5 3; }
.point-coverage { fill: var(--nss); }
.swatch.line-passed { background: var(--pass); } .swatch.line-coverage { background: var(--nss); }
table.ops td.op { font-family: monospace; font-size: 11px; }
table.ops td.opcell { text-align: center; font-weight: 700; cursor: help; }
p.more-ops { margin-top: .6em; }
details.profile pre { overflow-x: auto; }
)CSS";

// A test's grid page.
inline constexpr const char* kGridStyle = R"CSS(
nav { margin-bottom: .8em; }
table.layers td.cell { cursor: pointer; min-width: 7em; font-family: monospace; }
td.cell.recommended { font-weight: 700; outline: 2px solid #1565c0; outline-offset: -2px; }
td.cell.selected { box-shadow: inset 0 0 0 3px #212121; }
tr.critical td.layer { color: var(--fail); font-weight: 700; }
td.layer { font-family: monospace; overflow-wrap: anywhere; }
#detail-panel { position: fixed; right: 1em; bottom: 1em; max-width: 36em; background: #fff; border: 1px solid #888;
                box-shadow: 0 2px 8px rgba(0,0,0,.25); padding: .6em .8em; }
#detail-panel pre { margin: .3em 0 0; white-space: pre-wrap; word-break: break-word; }
#detail-panel button { float: right; }
)CSS";

// Both pages' scripts end with this: body's data-scroll-width, data-ready-ms
// and data-ready (see above).
inline constexpr const char* kMarkReady = R"JS(
document.body.dataset.scrollWidth = String(document.documentElement.scrollWidth);
document.body.dataset.readyMs = String(Math.round(performance.now()));
document.body.dataset.ready = '1';
)JS";

inline constexpr const char* kScript = R"JS(
(function () {
  'use strict';
  const rows = Array.from(document.querySelectorAll('tr.test'));
  const box = document.getElementById('filter');
  const toggles = Array.from(document.querySelectorAll('input.outcome-toggle'));
  const shown = document.getElementById('shown');

  // Presets from the hash: #filter=TEXT&outcome=a,b (a row's anchor, #test-<id>, sets none).
  function readHash() {
    const params = new URLSearchParams(location.hash.replace(/^#/, ''));
    if (params.has('filter')) box.value = params.get('filter');
    if (params.has('outcome')) {
      const wanted = new Set(params.get('outcome').split(',').map(s => s.trim()).filter(s => s));
      toggles.forEach(t => { t.checked = wanted.has(t.value); });
    }
  }

  function writeHash() {
    const params = new URLSearchParams();
    if (box.value) params.set('filter', box.value);
    const off = toggles.filter(t => !t.checked);
    if (off.length) params.set('outcome', toggles.filter(t => t.checked).map(t => t.value).join(','));
    try { history.replaceState(null, '', '#' + params.toString()); } catch (e) { /* file:// may refuse */ }
  }

  function apply() {
    const needle = box.value.toLowerCase();
    const on = new Set(toggles.filter(t => t.checked).map(t => t.value));
    let visible = 0;
    rows.forEach(r => {
      const show = r.dataset.id.toLowerCase().includes(needle) && on.has(r.dataset.outcome);
      r.hidden = !show;
      visible += show;
    });
    shown.textContent = visible + ' of ' + rows.length + ' tests shown';
  }

  box.addEventListener('input', () => { apply(); writeHash(); });
  toggles.forEach(t => t.addEventListener('change', () => { apply(); writeHash(); }));
  window.addEventListener('hashchange', () => { readHash(); apply(); });

  readHash();
  apply();
})();
)JS";

inline constexpr const char* kGridScript = R"JS(
(function () {
  'use strict';
  const panel = document.getElementById('detail-panel');
  function showDetail(cell) {
    document.querySelectorAll('td.cell.selected').forEach(c => c.classList.remove('selected'));
    cell.classList.add('selected');
    panel.querySelector('.where').textContent = cell.dataset.test + ' / ' + cell.dataset.layer;
    panel.querySelector('pre').textContent = cell.title;
    panel.hidden = false;
  }
  document.querySelectorAll('td.cell').forEach(c => c.addEventListener('click', () => showDetail(c)));
  panel.querySelector('button').addEventListener('click', () => { panel.hidden = true; });
})();
)JS";

}  // namespace torq::pipeline::matrix::html_template
