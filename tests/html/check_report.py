#!/usr/bin/python3
"""Assertions on the matrix reports as headless Chromium rendered them.

The sample of torq_html_sample (tests/html/make_sample_report.cc): its IDs,
outcomes, grid cells and op rows are written out by hand below; the charts'
numbers come from the sample's expected.json, which the sample works out
from its own data (never from the HTML under test).

  check_report.py dom DOM_FILE EXPECTED_JSON VISIBLE_IDS
                                  report.html (chromium --dump-dom at a
                                  1,400-pixel window); VISIBLE_IDS: the tests
                                  expected visible, '|'-separated, or 'all'
  check_report.py grid DOM_FILE EXPECTED_JSON TEST_ID
                                  a test's grid page
  check_report.py first DOM_FILE  the report of a spec's first run (no trend)
  check_report.py junit JUNIT_XML
  check_report.py summary SUMMARY_JSON
  check_report.py real DOM_FILE SUMMARY_JSON N_EXECUTORS
                                  a real run's report.html against its own
                                  summary.json (rows, outcomes, charts, grid
                                  pages read beside it, recommended cells)
Exit 0 when every assertion holds; otherwise prints them and exits 1.
"""
import ast
import json
import math
import os
import sys
import urllib.parse
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

ALL_IDS = [
    "resnet18-fp32-sim-discover",
    "resnet18-bf16-sim-discover",
    "squeezenet1.0-fp32-sim-discover",
    "squeezenet1.0-bf16-astra-run",
    "yolov8n-fp32-sim-discover",
    "odd<&\"'>-fp32-sim-run",
    "resnet18-fp32-astra-run",
    "resnet18-int8-sim-subgraph-Conv_layer1.0.conv1-Relu_layer4.1.relu_2",
]
OUTCOMES = ["passed", "failed", "xfailed", "xpassed", "skipped", "skipped", "passed", "passed"]
MAX_READY_MS = 2000  # "opens in under 2 s"
# The executors' order in a bar (DESIGN §1), then other names.
PRIORITY = ["nss", "css", "host"]
BAR_WIDTH = 300  # a bar's length (matrix_html_charts.cc)


def trend_y(share):
    """Where the trend (matrix_html_charts.cc Plot: 210 px high, margins 12 and 40) draws a share."""
    return 12 + (1 - share) * (210 - 12 - 40)

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def percent(share):
    """The report's whole percent, halves rounded up."""
    return "%d%%" % math.floor(share * 100 + 0.5)


class Dom(HTMLParser):
    """The elements of a page: tag, attributes, text and parent."""

    VOID = ("input", "meta", "br", "img", "link", "col", "wbr")

    def __init__(self, path):
        super().__init__(convert_charrefs=True)
        self.elements = []  # {"tag", "attrs", "text": [], "parent": index or None}
        self.stack = []
        with open(path, encoding="utf-8") as f:
            self.feed(f.read())

    def handle_starttag(self, tag, attrs):
        el = {"tag": tag, "attrs": {k: (v if v is not None else "") for k, v in attrs}, "text": [],
              "parent": self.stack[-1] if self.stack else None}
        self.elements.append(el)
        if tag not in self.VOID:
            self.stack.append(len(self.elements) - 1)

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in self.VOID:
            self.stack.pop()

    def handle_endtag(self, tag):
        while self.stack:
            if self.elements[self.stack.pop()]["tag"] == tag:
                break

    def handle_data(self, data):
        for i in self.stack:
            self.elements[i]["text"].append(data)

    def select(self, tag, cls=None, within=None):
        """Indices of the elements `tag` (with class `cls`), inside element `within` if given."""
        out = []
        for i, el in enumerate(self.elements):
            if el["tag"] != tag or (cls is not None and cls not in el["attrs"].get("class", "").split()):
                continue
            if within is None or self.inside(i, within):
                out.append(i)
        return out

    def inside(self, i, ancestor):
        p = self.elements[i]["parent"]
        while p is not None:
            if p == ancestor:
                return True
            p = self.elements[p]["parent"]
        return False

    def attrs(self, i):
        return self.elements[i]["attrs"]

    def text(self, i):
        return "".join(self.elements[i]["text"])

    def find(self, tag, cls=None, within=None):
        return [(self.attrs(i), self.text(i)) for i in self.select(tag, cls, within)]

    def by_id(self, ident):
        found = [i for i, el in enumerate(self.elements) if el["attrs"].get("id") == ident]
        return found[0] if found else None


def check_page(dom, name):
    """What every page must be: its script ran, one script, nothing external, fits 1,400 px, opens fast."""
    body = dom.find("body")
    check(len(body) == 1 and body[0][0].get("data-ready") == "1", "%s: body data-ready=1 (the script ran)" % name)
    check(len(dom.find("script")) == 1, "%s: exactly one <script>: %d" % (name, len(dom.find("script"))))
    check(not any("http" in el["attrs"].get("src", "") + el["attrs"].get("href", "") for el in dom.elements),
          "%s: no external URL in src/href" % name)
    if body:
        width, ms = int(body[0][0].get("data-scroll-width", "99999")), int(body[0][0].get("data-ready-ms", "99999"))
        check(width <= 1400, "%s: scroll width %d > 1400 at a 1400-pixel window" % (name, width))
        check(ms < MAX_READY_MS, "%s: ready after %d ms" % (name, ms))


def check_chart(dom, ident):
    """An accessible chart: <svg role=img> labelled by its title and description, and a hidden table."""
    svg = dom.by_id(ident)
    check(svg is not None, "chart #%s present" % ident)
    if svg is None:
        return None
    a = dom.attrs(svg)
    check(dom.elements[svg]["tag"] == "svg" and a.get("role") == "img", "#%s is <svg role=img>" % ident)
    check(a.get("aria-labelledby") == "%s-title %s-desc" % (ident, ident), "#%s aria-labelledby" % ident)
    for part in ("title", "desc"):
        el = dom.by_id("%s-%s" % (ident, part))
        check(el is not None and dom.elements[el]["parent"] == svg and dom.text(el).strip(),
              "#%s has a non-empty <%s>" % (ident, part))
    figure = dom.elements[svg]["parent"]
    check(len(dom.select("table", "sr-only", within=figure)) == 1, "#%s has a hidden table of its numbers" % ident)
    return svg


def check_heatmap(dom, exp):
    svg = check_chart(dom, "heatmap")
    if svg is None:
        return
    cells = dom.select("g", "heat-cell", within=svg)
    want = exp["heatmap"]
    check(len(cells) == len(exp["models"]) * len(exp["variants"]) == len(want),
          "heatmap cells: %d for %d models x %d variants" % (len(cells), len(exp["models"]), len(exp["variants"])))
    for i, w in zip(cells, want):
        a = dom.attrs(i)
        where = "heatmap %s/%s" % (w["model"], w["variant"])
        got = (a.get("data-model"), a.get("data-variant"), a.get("data-state"))
        check(got == (w["model"], w["variant"], w["state"]), "%s: cell %s" % (where, a))
        check(int(a.get("data-tests", -1)) == w["tests"], "%s: %s tests" % (where, a.get("data-tests")))
        shown = [dom.text(t) for t in dom.select("text", within=i)]
        links = [dom.attrs(x).get("href") for x in dom.select("a", within=i)]
        want_link = "#filter=" + urllib.parse.quote(w["model"] + "-" + w["variant"] + "-", safe="-_.~")
        check(links == ([] if w["state"] == "absent" else [want_link]), "%s: links %s" % (where, links))
        if w["state"] == "coverage":
            check(abs(float(a.get("data-coverage", "nan")) - w["coverage"]) < 5e-5,
                  "%s: coverage %s, expected %.4f" % (where, a.get("data-coverage"), w["coverage"]))
            want_text = percent(w["coverage"])
            check(shown == [want_text], "%s: shows %s, expected %s" % (where, shown, want_text))
        else:
            check(shown == (["–"] if w["state"] == "no-layers" else [""]), "%s: shows %s" % (where, shown))


def bar_order(layers):
    return [e for e in PRIORITY if e in layers] + sorted(e for e in layers if e not in PRIORITY)


def check_bars(dom, exp):
    svg = check_chart(dom, "executors")
    if svg is None:
        return
    bars = dom.select("g", "bar", within=svg)
    check([dom.attrs(b).get("data-model") for b in bars] == exp["models"], "one bar per model, in order")
    for b, w in zip(bars, exp["bars"]):
        check(int(dom.attrs(b).get("data-layers", -1)) == w["total"], "bar %s: layers %s" % (w["model"], dom.attrs(b)))
        segs = [dom.attrs(s) for s in dom.select("rect", "seg", within=b)]
        got = [(s.get("data-executor"), int(s.get("data-layers", -1))) for s in segs]
        want = [(e, w["layers"][e]) for e in bar_order(w["layers"]) if w["layers"][e] > 0]
        check(got == want, "bar %s: segments %s, expected %s" % (w["model"], got, want))
        for s, (e, n) in zip(segs, want):
            check(abs(float(s["width"]) - BAR_WIDTH * n / w["total"]) < 0.06,
                  "bar %s: %s segment %s px wide for %d of %d layers" % (w["model"], e, s["width"], n, w["total"]))


def check_trend(dom, exp):
    svg = check_chart(dom, "trend")
    if svg is None:
        return
    check(dom.by_id("trend-none") is None, "no 'no history' sentence with a trend")
    passed = [dom.attrs(c) for c in dom.select("circle", "point-passed", within=svg)]
    check([int(c["data-seq"]) for c in passed] == [p["seq"] for p in exp["trend"]],
          "trend: one passed point per run %s" % [c.get("data-seq") for c in passed])
    for c, p in zip(passed, exp["trend"]):
        check((int(c["data-passed"]), int(c["data-total"])) == (p["passed"], p["total"]),
              "trend run %d: %s" % (p["seq"], c))
        check(abs(float(c["cy"]) - trend_y(p["passed"] / p["total"])) < 0.06,
              "trend run %d: passed at y %s" % (p["seq"], c["cy"]))
    known = [p for p in exp["trend"] if p["coverage"] is not None]
    coverage = [dom.attrs(c) for c in dom.select("circle", "point-coverage", within=svg)]
    check([int(c["data-seq"]) for c in coverage] == [p["seq"] for p in known],
          "trend: a coverage point per run that knows it %s" % [c.get("data-seq") for c in coverage])
    for c, p in zip(coverage, known):
        check(abs(float(c["data-coverage"]) - p["coverage"]) < 5e-5 and
              abs(float(c["cy"]) - trend_y(p["coverage"])) < 0.06,
              "trend run %d: coverage point %s, expected %.4f" % (p["seq"], c, p["coverage"]))


def check_changes(dom, exp):
    rows = {dom.attrs(i).get("data-id"): i for i in dom.select("tr", "test")}
    for ident, i in rows.items():
        a, kind = dom.attrs(i), exp["changes"].get(ident)
        classes = a.get("class", "").split()
        if kind is None:
            check("changed" not in classes and "data-change" not in a, "%s: not highlighted" % ident)
            continue
        check(a.get("data-change") == kind and "changed" in classes and "change-" + kind in classes,
              "%s: highlighted as %s: %s" % (ident, kind, a))
        check(len(dom.select("span", "change-badge", within=i)) == 1, "%s: one change badge" % ident)
    section = dom.by_id("changes")
    check(section is not None, "section#changes present")
    if section is None:
        return
    order = ["new-failure", "fixed", "outcome", "drift", "new-test"]
    items = dom.select("li", within=section)
    want = [k for k in order if k in exp["changes"].values()]
    check([dom.attrs(i).get("data-change") for i in items] == want,
          "changes summary kinds %s" % [dom.attrs(i) for i in items])
    for i in items:
        kind = dom.attrs(i).get("data-change")
        ids = [dom.text(x) for x in dom.select("a", within=i)]
        check(ids == [t for t in exp["ids"] if exp["changes"].get(t) == kind] and
              dom.attrs(i).get("data-count") == str(len(ids)),
              "changes summary %s: %s" % (kind, ids))


def check_rows(dom, exp, visible_spec):
    rows = dom.find("tr", "test")
    check([a.get("data-id") for a, _ in rows] == ALL_IDS, "tr.test ids: %s" % [a.get("data-id") for a, _ in rows])
    check([a.get("data-outcome") for a, _ in rows] == OUTCOMES, "tr.test outcomes")
    expected_visible = ALL_IDS if visible_spec == "all" else [i for i in visible_spec.split("|") if i]
    visible = [a["data-id"] for a, _ in rows if "hidden" not in a]
    check(visible == expected_visible, "visible rows %s, expected %s" % (visible, expected_visible))
    shown_text = [t for a, t in dom.find("span") if a.get("id") == "shown"]
    check(shown_text == ["%d of %d tests shown" % (len(expected_visible), len(ALL_IDS))],
          "#shown text: %s" % shown_text)
    check("<script>alert(\"x\")</script> & 'q'" in [t for _, t in dom.find("td", "msg")],
          "escaped message shown as text")
    pages = {g["id"]: g["path"] for g in exp["grid_pages"]}
    for i in dom.select("td", "id"):
        links = [dom.attrs(a).get("href") for a in dom.select("a", within=i)]
        ident = dom.text(i)
        check(links == ([pages[ident]] if ident in pages else []), "%s links %s" % (ident, links))


def check_dom(path, expected_path, visible_spec):
    dom = Dom(path)
    with open(expected_path, encoding="utf-8") as f:
        exp = json.load(f)
    check_page(dom, "report")
    check_rows(dom, exp, visible_spec)
    # Nothing per layer: the grids are on their pages.
    check(not dom.select("td", "cell") and not any("data-layer" in el["attrs"] for el in dom.elements),
          "report.html holds no layer cell")
    check_heatmap(dom, exp)
    check_bars(dom, exp)
    check_trend(dom, exp)
    check_changes(dom, exp)
    check_ops(dom, exp)


def check_ops(dom, exp):
    # report.html: the ops that block (Resize) or fall back (MaxPool), and a
    # link to the whole grid on ops.html.
    ops = [a.get("data-op-type") for a, _ in dom.find("tr", "op")]
    check(ops == ["Resize", "MaxPool"], "report.html op rows %s" % ops)
    check(len(dom.find("td", "opcell")) == 2 * exp["op_executors"], "report.html op cells")
    more = dom.select("p", "more-ops")
    links = [dom.attrs(a).get("href") for a in dom.select("a", within=more[0])] if more else []
    check(links == ["ops.html"] and "all %d ops" % exp["op_rows"] in dom.text(more[0]),
          "report.html links the whole op grid: %s" % links)


def check_ops_page(path, expected_path):
    # ops.html: every op, blocked first (Resize), then falling back
    # (MaxPool), then by occurrences (Conv in both reports), then by op.
    dom = Dom(path)
    with open(expected_path, encoding="utf-8") as f:
        exp = json.load(f)
    ops = [a.get("data-op-type") for a, _ in dom.find("tr", "op")]
    check(ops == ["Resize", "MaxPool", "Conv", "Add", "Gemm", "Relu"], "ops.html rows %s" % ops)
    check([dom.attrs(a).get("href") for a in dom.select("a")][:1] == ["report.html"], "ops.html links back")
    opcells = dom.find("td", "opcell")
    check(len(ops) == exp["op_rows"] and len(opcells) == exp["op_rows"] * exp["op_executors"],
          "op grid: %d cells for %d ops x %d executors" % (len(opcells), exp["op_rows"], exp["op_executors"]))
    resize_nss = [a for a, _ in opcells if a.get("data-executor") == "nss" and "status-error" in a["class"].split()]
    title = "nss: error\nfirst error: FAILED_COMPILATION: resize: mode \"cubic\" <unsupported> & more"
    check(any(a.get("title") == title for a in resize_nss), "Resize nss op cell title %s" % resize_nss)
    marks = sorted(t for a, t in opcells)
    check(marks == sorted(["✗"] * 4 + ["≈"] * 2 + ["·"] + ["✓"] * 11), "op cell marks %s" % marks)
    conv_nss = [t for a, t in opcells if a.get("data-executor") == "nss" and "status-success" in a["class"].split()]
    check(len(conv_nss) == 3, "ops running on nss: %d" % len(conv_nss))


def check_first(path):
    dom = Dom(path)
    check_page(dom, "first-run report")
    check(dom.by_id("trend") is None and not dom.select("circle"), "no trend chart on a first run")
    sentence = dom.by_id("trend-none")
    check(sentence is not None and "No history yet (first run of this spec)" in dom.text(sentence),
          "the first run says there is no history yet")
    check(dom.by_id("heatmap") is not None and dom.by_id("executors") is not None, "the other charts are there")


def check_grid(path, expected_path, test_id):
    dom = Dom(path)
    with open(expected_path, encoding="utf-8") as f:
        exp = {g["id"]: g for g in json.load(f)["grid_pages"]}[test_id]
    check_page(dom, "grid page of " + test_id)
    back = dom.by_id("back")
    check(back is not None and dom.attrs(back).get("href") == "../../report.html#test-" + test_id,
          "link back to the report")
    grids = dom.find("section", "grid")
    check([a.get("data-id") for a, _ in grids] == [test_id], "one grid, of %s" % test_id)
    cells = dom.find("td", "cell")
    check(len(cells) == exp["cells"] and len(dom.find("tr", "layer")) == exp["layers"],
          "%s: %d cells in %d rows, expected %d in %d" % (test_id, len(cells), len(dom.find("tr", "layer")),
                                                          exp["cells"], exp["layers"]))
    check(all(a.get("data-test") == test_id for a, _ in cells), "every cell names its test")
    (check_fp32_grid if test_id == ALL_IDS[0] else check_bf16_grid)(dom, cells)


def statuses(cells):
    return sorted(c for a, _ in cells for c in a["class"].split() if c.startswith("status-"))


def recommended(cells):
    return [(a["data-layer"], a["data-executor"], text.strip()) for a, text in cells
            if "recommended" in a["class"].split()]


def check_fp32_grid(dom, cells):
    check(statuses(cells) == sorted(["status-success"] * 10 + ["status-difference", "status-error"]),
          "fp32 grid statuses %s" % statuses(cells))
    check(recommended(cells) == [("Conv_c1", "nss", "★ success"), ("Relu_r1", "nss", "★ success"),
                                 ("MaxPool_p1", "host", "★ success"), ("Gemm_fc", "nss", "★ success")],
          "fp32 recommended cells %s" % recommended(cells))
    conv = [a for a, _ in cells if a["data-layer"] == "Conv_c1" and a["data-executor"] == "nss"]
    check(len(conv) == 1 and conv[0]["title"] ==
          "nss: success (recommended)\npcc: 0.9999\nmax_abs: 0.25\nmax_rel: 0.0625\n"
          "runtime_ms: 0.125 (3 runs)\nhost_ms: 40\nworker: w1 (sim-0.1)", "Conv_c1/nss title: %r" % conv)
    check([a.get("href") for a, _ in dom.find("a") if a.get("id") != "back"] == ["torq_gen_config_resnet18.json"],
          "the page links the test's report file")


def check_bf16_grid(dom, cells):
    check(statuses(cells) == sorted(["status-success"] * 4 + ["status-difference", "status-absent"] +
                                    ["status-error"] * 3), "bf16 grid statuses %s" % statuses(cells))
    check(recommended(cells) == [("Conv_c1", "nss", "★ success"), ("Add_a1", "host", "★ success")],
          "bf16 recommended cells %s" % recommended(cells))
    err = [a for a, _ in cells if a["data-layer"] == "Resize_up<1>" and a["data-executor"] == "nss"]
    check(len(err) == 1 and "error_class: FAILED_COMPILATION\nerror: resize: mode \"cubic\" <unsupported> & more"
          in err[0]["title"], "Resize nss error title: %r" % err)
    absent = [a for a, _ in cells if "status-absent" in a["class"].split()]
    check(len(absent) == 1 and absent[0]["data-layer"] == "Add_a1" and absent[0]["data-executor"] == "css",
          "absent cell is Add_a1/css")
    critical = [a.get("data-layer") for a, _ in dom.find("tr", "critical")]
    check(critical == ["Resize_up<1>"], "critical layer rows: %s" % critical)


PROPS = ["outcome", "bringup_status", "status", "pcc", "required_pcc", "layers", "critical_failures",
         "executor_distribution", "wall_time", "reason"]


def check_junit(path):
    root = ET.parse(path).getroot()
    check(root.tag == "testsuite" and root.get("name") == "torq-matrix", "root <testsuite name=torq-matrix>")
    check((root.get("tests"), root.get("failures"), root.get("skipped"), root.get("errors")) == ("8", "1", "3", "0"),
          "suite counts %s" % dict(root.attrib))
    run_props = {p.get("name"): p.get("value") for p in root.findall("properties/property")}
    check(run_props.get("run_id") == "20240501-120000-sample" and run_props.get("m") == "not slow",
          "run properties %s" % run_props)
    cases = root.findall("testcase")
    check([c.get("name") for c in cases] == ALL_IDS, "testcase names %s" % [c.get("name") for c in cases])
    check([c.get("classname") for c in cases] ==
          ["resnet18", "resnet18", "squeezenet1.0", "squeezenet1.0", "yolov8n", "odd<&\"'>", "resnet18", "resnet18"],
          "classnames")
    for c, outcome in zip(cases, OUTCOMES):
        props = {p.get("name"): p.get("value") for p in c.findall("properties/property")}
        names = list(props)
        check(names[:len(PROPS)] == PROPS and "tags" in names, "%s property names %s" % (c.get("name"), names))
        tags = ast.literal_eval(props.get("tags", "{}"))
        check(tags.get("bringup_status") == props.get("bringup_status") and tags.get("outcome") == outcome and
              tags.get("test_name") == c.get("name"), "%s tags %s" % (c.get("name"), tags))
        check(("error_message" in props) == (outcome in ("failed", "xfailed", "skipped")),
              "%s error_message iff failed, xfailed or skipped" % c.get("name"))
        check(props.get("outcome") == outcome, "%s outcome property" % c.get("name"))
        failure, skipped = c.find("failure"), c.find("skipped")
        check((failure is not None) == (outcome == "failed"), "%s <failure> present iff failed" % c.get("name"))
        check((skipped is not None) == (outcome in ("skipped", "xfailed")), "%s <skipped>" % c.get("name"))
    bf16 = cases[1]
    props = {p.get("name"): p.get("value") for p in bf16.findall("properties/property")}
    check(props["executor_distribution"] == "nss:1,host:1,none:1" and props["pcc"] == "0.95" and
          props["wall_time"] == "9.250", "bf16 properties %s" % props)
    check(props["since_previous"] == "new failure; 1 layer changed" and
          props["error_message"] == "pcc 0.95 < required 0.99 (layer Resize_up<1> & \"friends\")",
          "bf16 since_previous and error_message %s" % props)
    failure = bf16.find("failure")
    check(failure.get("type") == "result" and failure.get("message") ==
          "pcc 0.95 < required 0.99 (layer Resize_up<1> & \"friends\")", "failure attrs %s" % failure.attrib)
    check(cases[5].find("skipped").get("message") == "<script>alert(\"x\")</script> & 'q'", "odd skip message")


def check_summary(path):
    with open(path, encoding="utf-8") as f:
        s = json.load(f)
    check(s["counts"] == {"passed": 3, "failed": 1, "skipped": 2, "xfailed": 1, "xpassed": 1},
          "counts %s" % s["counts"])
    check(s["exit_code"] == 1, "exit_code 1")
    check([t["id"] for t in s["tests"]] == ALL_IDS, "test ids")
    check([t["outcome"] for t in s["tests"]] == OUTCOMES, "test outcomes")
    check(s["run"]["jobs"] == 96 and s["run"]["selected"] == 8 and s["run"]["deselected"] == 4, "run %s" % s["run"])
    t0 = s["tests"][0]
    check(t0["executor_distribution"] == {"nss": 3, "host": 1} and t0["pcc"] == 0.9998 and t0["layers"] == 4 and
          t0["report"].endswith("torq_gen_config_resnet18.json"), "first test %s" % t0)
    check(s["tests"][4]["pcc"] is None and s["tests"][4]["bringup_status"] == "NOT_STARTED", "placeholder test")


def check_real_grid(page, t, n_executors):
    """A real test's grid page (static HTML: its cells are in the file) against summary.json."""
    check(os.path.exists(page), "%s: grid page %s exists" % (t["id"], page))
    if not os.path.exists(page):
        return
    cells = Dom(page).find("td", "cell")
    check(len(cells) == t["layers"] * n_executors,
          "%s: %d grid cells for %d layers" % (t["id"], len(cells), t["layers"]))
    rec = [a for a, _ in cells if "recommended" in a["class"].split()]
    for e, n in t["executor_distribution"].items():
        if e != "none":
            got = sum(1 for a in rec if a.get("data-executor") == e)
            check(got == n, "%s: %d cells recommend %s, summary says %d" % (t["id"], got, e, n))
    check(len(rec) == sum(n for e, n in t["executor_distribution"].items() if e != "none"),
          "%s: %d recommended cells" % (t["id"], len(rec)))


def check_real(path, summary_path, n_executors):
    """A real run's report as Chromium rendered it, against summary.json."""
    dom = Dom(path)
    with open(summary_path, encoding="utf-8") as f:
        s = json.load(f)
    tests = s["tests"]
    check_page(dom, "report")
    rows = dom.find("tr", "test")
    check([a.get("data-id") for a, _ in rows] == [t["id"] for t in tests], "rows are the summary's tests in order")
    check([a.get("data-outcome") for a, _ in rows] == [t["outcome"] for t in tests], "row outcomes")
    check(all("hidden" not in a for a, _ in rows), "every row visible without a filter")
    shown = [t for a, t in dom.find("span") if a.get("id") == "shown"]
    check(shown == ["%d of %d tests shown" % (len(tests), len(tests))], "#shown text: %s" % shown)
    check(not dom.select("td", "cell"), "report.html holds no layer cell")
    models = list(dict.fromkeys(t["model"] for t in tests))
    variants = list(dict.fromkeys(t["variant"] for t in tests))
    check(len(dom.select("g", "heat-cell")) == len(models) * len(variants), "a heatmap cell per model x variant")
    check([a.get("data-model") for a, _ in dom.find("g", "bar")] == models, "a bar per model")
    links = {}
    for i in dom.select("td", "id"):
        for a in dom.select("a", within=i):
            links[dom.text(i)] = dom.attrs(a).get("href")
    base = os.path.dirname(os.path.abspath(summary_path))
    for t in tests:
        check((t["id"] in links) == (t["report"] is not None), "%s: linked iff it has a report" % t["id"])
        if t["id"] in links:
            check_real_grid(os.path.join(base, links[t["id"]]), t, n_executors)


def main():
    kind, path = sys.argv[1], sys.argv[2]
    if kind == "real":
        check_real(path, sys.argv[3], int(sys.argv[4]))
    elif kind == "dom":
        check_dom(path, sys.argv[3], sys.argv[4])
    elif kind == "grid":
        check_grid(path, sys.argv[3], sys.argv[4])
    elif kind == "first":
        check_first(path)
    elif kind == "ops":
        check_ops_page(path, sys.argv[3])
    elif kind == "junit":
        check_junit(path)
    elif kind == "summary":
        check_summary(path)
    else:
        sys.exit("unknown check " + kind)
    for f in failures:
        print("FAIL %s: %s" % (path, f))
    print("%s %s: %s" % (kind, path, "ok" if not failures else "%d failures" % len(failures)))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
