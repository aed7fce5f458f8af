// The fixed parts of the matrix HTML report (matrix_html.cc): the inline
// stylesheet and the inline script. Self-contained: no external URL, font or
// image. The script
//  - filters `tr.test` rows by a case-insensitive substring of `data-id`
//    (#filter) and by the checked outcome boxes (input.outcome-toggle);
//    rows filtered out get the `hidden` attribute, and so does the layer
//    grid (<details class="grid" data-id>) of a hidden test;
//  - reads presets from the URL hash, "#filter=resnet&outcome=failed,xpassed"
//    (URLSearchParams syntax; a missing key leaves that control as it is),
//    "open=all" or "open=<id>,<id>" opens those grids (without scrolling),
//    and "#grid-<id>" opens that grid and scrolls to it;
//  - shows a grid cell's metrics (its title) in #detail-panel on click;
//  - sets document.body.dataset.ready = "1" once it has run, so a headless
//    browser test can tell that the DOM it dumps is the filtered one.
#pragma once

namespace torq::pipeline::matrix::html_template {

inline constexpr const char* kStyle = R"CSS(
:root { --pass: #2e7d32; --fail: #c62828; --skip: #757575; --xfail: #6a5acd; --xpass: #ef6c00;
        --ok-bg: #c8e6c9; --diff-bg: #ffe082; --err-bg: #ef9a9a; --absent-bg: #e0e0e0; }
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #212121; }
h1 { font-size: 1.4em; margin: 0 0 .4em; }
h2 { font-size: 1.15em; margin: 1.4em 0 .5em; }
dl.run { display: grid; grid-template-columns: max-content auto; gap: .1em 1em; margin: 0 0 .8em; }
dl.run dt { font-weight: 600; } dl.run dd { margin: 0; font-family: monospace; }
ul.counts { list-style: none; padding: 0; display: flex; gap: .6em; flex-wrap: wrap; }
ul.counts li { padding: .2em .7em; border-radius: 1em; color: #fff; font-weight: 600; }
.outcome-passed .badge, ul.counts li.outcome-passed { background: var(--pass); }
.outcome-failed .badge, ul.counts li.outcome-failed { background: var(--fail); }
.outcome-skipped .badge, ul.counts li.outcome-skipped { background: var(--skip); }
.outcome-xfailed .badge, ul.counts li.outcome-xfailed { background: var(--xfail); }
.outcome-xpassed .badge, ul.counts li.outcome-xpassed { background: var(--xpass); }
.badge { color: #fff; padding: .05em .5em; border-radius: .8em; font-weight: 600; }
#controls { margin: .8em 0; display: flex; gap: 1em; align-items: center; flex-wrap: wrap; }
#filter { width: 22em; padding: .25em .4em; }
#shown { color: #555; }
div.scroll { overflow-x: auto; }
table { border-collapse: collapse; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: .2em .4em; text-align: left; vertical-align: top; }
th { background: #f5f5f5; position: sticky; top: 0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.id { font-family: monospace; white-space: nowrap; }
td.msg { min-width: 12em; max-width: 30em; white-space: pre-wrap; overflow-wrap: anywhere; }
td.enum { font-size: 12px; }
td.below { color: var(--fail); font-weight: 600; }
tr.test:hover { background: #fafafa; }
details.grid { margin: .6em 0; border: 1px solid #ddd; border-radius: 4px; padding: .3em .6em; }
details.grid summary { cursor: pointer; font-family: monospace; }
table.layers td.cell { cursor: pointer; min-width: 7em; font-family: monospace; }
.status-success { background: var(--ok-bg); }
.status-difference { background: var(--diff-bg); }
.status-error { background: var(--err-bg); }
.status-absent { background: var(--absent-bg); color: #777; }
.status-mixed { background: repeating-linear-gradient(45deg, var(--ok-bg), var(--ok-bg) 6px,
                                                     var(--err-bg) 6px, var(--err-bg) 12px); }
td.since { font-size: 12px; min-width: 7em; max-width: 14em; }
table#ops td.op { font-family: monospace; font-size: 12px; max-width: 48em; overflow-wrap: anywhere; }
td.cell.recommended { font-weight: 700; outline: 2px solid #1565c0; outline-offset: -2px; }
td.cell.selected { box-shadow: inset 0 0 0 3px #212121; }
tr.critical td.layer { color: var(--fail); font-weight: 700; }
.legend span { display: inline-block; padding: 0 .5em; margin-right: .4em; border: 1px solid #ccc; }
#detail-panel { position: fixed; right: 1em; bottom: 1em; max-width: 36em; background: #fff; border: 1px solid #888;
                box-shadow: 0 2px 8px rgba(0,0,0,.25); padding: .6em .8em; }
#detail-panel pre { margin: .3em 0 0; white-space: pre-wrap; word-break: break-word; }
#detail-panel button { float: right; }
)CSS";

inline constexpr const char* kScript = R"JS(
(function () {
  'use strict';
  const rows = Array.from(document.querySelectorAll('tr.test'));
  const grids = Array.from(document.querySelectorAll('details.grid'));
  const box = document.getElementById('filter');
  const toggles = Array.from(document.querySelectorAll('input.outcome-toggle'));
  const shown = document.getElementById('shown');
  const panel = document.getElementById('detail-panel');

  // Presets from the hash: #filter=TEXT&outcome=a,b  or  #grid-<id>.
  function readHash() {
    let hash = location.hash.replace(/^#/, '');
    try { hash = decodeURIComponent(hash); } catch (e) { /* keep it raw */ }
    if (hash.startsWith('grid-')) {
      const grid = document.getElementById(hash);
      if (grid) { grid.open = true; grid.scrollIntoView(); }
      return;
    }
    const params = new URLSearchParams(location.hash.replace(/^#/, ''));
    if (params.has('filter')) box.value = params.get('filter');
    if (params.has('outcome')) {
      const wanted = new Set(params.get('outcome').split(',').map(s => s.trim()).filter(s => s));
      toggles.forEach(t => { t.checked = wanted.has(t.value); });
    }
    if (params.has('open')) {
      const which = params.get('open').split(',');
      grids.forEach(g => { if (which.includes('all') || which.includes(g.dataset.id)) g.open = true; });
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
    const visible = new Set();
    rows.forEach(r => {
      const show = r.dataset.id.toLowerCase().includes(needle) && on.has(r.dataset.outcome);
      r.hidden = !show;
      if (show) visible.add(r.dataset.id);
    });
    grids.forEach(g => { g.hidden = !visible.has(g.dataset.id); });
    shown.textContent = visible.size + ' of ' + rows.length + ' tests shown';
  }

  function showDetail(cell) {
    document.querySelectorAll('td.cell.selected').forEach(c => c.classList.remove('selected'));
    cell.classList.add('selected');
    panel.querySelector('.where').textContent = cell.dataset.test + ' / ' + cell.dataset.layer;
    panel.querySelector('pre').textContent = cell.title;
    panel.hidden = false;
  }

  box.addEventListener('input', () => { apply(); writeHash(); });
  toggles.forEach(t => t.addEventListener('change', () => { apply(); writeHash(); }));
  window.addEventListener('hashchange', () => { readHash(); apply(); });
  document.querySelectorAll('td.cell').forEach(c => c.addEventListener('click', () => showDetail(c)));
  panel.querySelector('button').addEventListener('click', () => { panel.hidden = true; });

  readHash();
  apply();
  document.body.dataset.ready = '1';
})();
)JS";

}  // namespace torq::pipeline::matrix::html_template
