#!/usr/bin/python3
"""Assertions on the sample matrix reports of torq_html_sample
(tests/html/make_sample_report.cc). The expectations below are written out
by hand from that sample, not derived from the files under test.

  check_report.py dom DOM_FILE VISIBLE_IDS [open]
                                             rendered DOM (chromium --dump-dom);
                                             VISIBLE_IDS: the tests expected
                                             visible, '|'-separated, or 'all';
                                             'open': visible grids are open
                                             (else every grid is closed)
  check_report.py junit JUNIT_XML
  check_report.py summary SUMMARY_JSON
  check_report.py real DOM_FILE SUMMARY_JSON N_EXECUTORS
                                             the rendered DOM of a real run's
                                             report.html against its own
                                             summary.json (rows, outcomes,
                                             grids, recommended cells)
Exit 0 when every assertion holds; otherwise prints them and exits 1.
"""
import ast
import json
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

ALL_IDS = [
    "resnet18-fp32-sim-discover",
    "resnet18-bf16-sim-discover",
    "squeezenet1.0-fp32-sim-discover",
    "squeezenet1.0-bf16-astra-run",
    "yolov8n-fp32-sim-discover",
    "odd<&\"'>-fp32-sim-run",
]
OUTCOMES = ["passed", "failed", "xfailed", "xpassed", "skipped", "skipped"]

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


class Dom(HTMLParser):
    """Collects the elements the checks need, with attributes and text."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.elements = []  # (tag, attrs dict, text list)
        self.stack = []

    def handle_starttag(self, tag, attrs):
        el = (tag, {k: (v if v is not None else "") for k, v in attrs}, [])
        self.elements.append(el)
        if tag not in ("input", "meta", "br", "img", "link"):
            self.stack.append(el)

    def handle_endtag(self, tag):
        while self.stack:
            if self.stack.pop()[0] == tag:
                break

    def handle_data(self, data):
        for el in self.stack:
            el[2].append(data)

    def find(self, tag, cls=None):
        out = []
        for t, a, text in self.elements:
            if t == tag and (cls is None or cls in a.get("class", "").split()):
                out.append((a, "".join(text)))
        return out


def check_dom(path, visible_spec, grids_open):
    dom = Dom()
    with open(path, encoding="utf-8") as f:
        dom.feed(f.read())
    body = dom.find("body")
    check(len(body) == 1 and body[0][0].get("data-ready") == "1", "body data-ready=1 (the script ran)")
    check(len(dom.find("script")) == 1, "exactly one <script> (escaped text made none): %d" % len(dom.find("script")))
    check(not any("http" in a.get("src", "") + a.get("href", "") for _, a, _ in dom.elements),
          "no external URL in src/href")

    rows = dom.find("tr", "test")
    check([a.get("data-id") for a, _ in rows] == ALL_IDS, "tr.test ids: %s" % [a.get("data-id") for a, _ in rows])
    check([a.get("data-outcome") for a, _ in rows] == OUTCOMES, "tr.test outcomes")
    for a, _ in rows:
        check("outcome-" + a.get("data-outcome", "?") in a.get("class", "").split(), "row class outcome-*")
    expected_visible = ALL_IDS if visible_spec == "all" else [i for i in visible_spec.split("|") if i]
    visible = [a["data-id"] for a, _ in rows if "hidden" not in a]
    check(visible == expected_visible, "visible rows %s, expected %s" % (visible, expected_visible))
    shown = dom.find("span")
    shown_text = [t for a, t in shown if a.get("id") == "shown"]
    check(shown_text == ["%d of 6 tests shown" % len(expected_visible)], "#shown text: %s" % shown_text)

    # The odd row's text cells carry the escaped message as text.
    odd_cells = [t for a, t in dom.find("td", "msg")]
    check("<script>alert(\"x\")</script> & 'q'" in odd_cells, "escaped message shown as text")

    grids = dom.find("details", "grid")
    check([a.get("data-id") for a, _ in grids] == ALL_IDS[:2], "grids: %s" % [a.get("data-id") for a, _ in grids])
    for a, _ in grids:
        check(a.get("id") == "grid-" + a.get("data-id"), "grid element id")
        check(("hidden" in a) == (a["data-id"] not in expected_visible), "grid of %s hidden state" % a["data-id"])
        check(("open" in a) == (grids_open and a["data-id"] in expected_visible), "grid of %s open state" % a["data-id"])

    cells = dom.find("td", "cell")
    by_test = {}
    for a, text in cells:
        by_test.setdefault(a.get("data-test"), []).append((a, text))
    fp32 = by_test.get(ALL_IDS[0], [])
    bf16 = by_test.get(ALL_IDS[1], [])
    check(len(fp32) == 12 and len(bf16) == 9, "grid cells: %d and %d" % (len(fp32), len(bf16)))

    def statuses(cs):
        return [c for a, _ in cs for c in a["class"].split() if c.startswith("status-")]

    check(sorted(statuses(fp32)) == sorted(["status-success"] * 10 + ["status-difference", "status-error"]),
          "fp32 grid statuses %s" % statuses(fp32))
    check(sorted(statuses(bf16)) == sorted(["status-success"] * 4 + ["status-difference", "status-absent"] +
                                           ["status-error"] * 3), "bf16 grid statuses %s" % statuses(bf16))
    rec = [(a["data-test"], a["data-layer"], a["data-executor"], text.strip()) for a, text in cells
           if "recommended" in a["class"].split()]
    check(rec == [(ALL_IDS[0], "Conv_c1", "nss", "★ success"), (ALL_IDS[0], "Relu_r1", "nss", "★ success"),
                  (ALL_IDS[0], "MaxPool_p1", "host", "★ success"), (ALL_IDS[0], "Gemm_fc", "nss", "★ success"),
                  (ALL_IDS[1], "Conv_c1", "nss", "★ success"), (ALL_IDS[1], "Add_a1", "host", "★ success")],
          "recommended cells %s" % rec)
    star = sum(text.count("★") for _, text in cells)
    check(star == 6, "six ★ markers in cells: %d" % star)
    conv = [a for a, _ in fp32 if a["data-layer"] == "Conv_c1" and a["data-executor"] == "nss"]
    check(len(conv) == 1 and conv[0]["title"] ==
          "nss: success (recommended)\npcc: 0.9999\nmax_abs: 0.25\nmax_rel: 0.0625\n"
          "runtime_ms: 0.125 (3 runs)\nhost_ms: 40\nworker: w1 (sim-0.1)", "Conv_c1/nss title: %r" % conv)
    err = [a for a, _ in bf16 if a["data-layer"] == "Resize_up<1>" and a["data-executor"] == "nss"]
    check(len(err) == 1 and "error_class: FAILED_COMPILATION\nerror: resize: mode \"cubic\" <unsupported> & more"
          in err[0]["title"], "Resize nss error title: %r" % err)
    absent = [a for a, _ in bf16 if "status-absent" in a["class"].split()]
    check(len(absent) == 1 and absent[0]["data-layer"] == "Add_a1" and absent[0]["data-executor"] == "css",
          "absent cell is Add_a1/css")
    critical = [a.get("data-layer") for a, _ in dom.find("tr", "critical")]
    check(critical == ["Resize_up<1>"], "critical layer rows: %s" % critical)

    since = [t for _, t in dom.find("td", "since")]
    check(since == ["unchanged", "new failure; 1 layer changed", "-", "-", "-", "-"], "since cells %s" % since)
    # The op-support matrix: blocked first (Resize), then falling back
    # (MaxPool), then by occurrences (Conv in both reports), then by op.
    ops = [a.get("data-op-type") for a, _ in dom.find("tr", "op")]
    check(ops == ["Resize", "MaxPool", "Conv", "Add", "Gemm", "Relu"], "op rows %s" % ops)
    opcells = dom.find("td", "opcell")
    check(len(opcells) == 18, "op cells: %d" % len(opcells))
    resize_nss = [a for a, _ in opcells if a.get("data-executor") == "nss" and "status-error" in a["class"].split()]
    check(any(a.get("title") == "FAILED_COMPILATION: resize: mode \"cubic\" <unsupported> & more" for a in resize_nss),
          "Resize nss op cell title %s" % resize_nss)
    conv_nss = [t for a, t in opcells if a.get("data-executor") == "nss" and "status-success" in a["class"].split()]
    check(len(conv_nss) == 3, "ops running on nss alone: %d" % len(conv_nss))


PROPS = ["outcome", "bringup_status", "status", "pcc", "required_pcc", "layers", "critical_failures",
         "executor_distribution", "wall_time", "reason"]


def check_junit(path):
    root = ET.parse(path).getroot()
    check(root.tag == "testsuite" and root.get("name") == "torq-matrix", "root <testsuite name=torq-matrix>")
    check((root.get("tests"), root.get("failures"), root.get("skipped"), root.get("errors")) == ("6", "1", "3", "0"),
          "suite counts %s" % dict(root.attrib))
    run_props = {p.get("name"): p.get("value") for p in root.findall("properties/property")}
    check(run_props.get("run_id") == "20240501-120000-sample" and run_props.get("m") == "not slow",
          "run properties %s" % run_props)
    cases = root.findall("testcase")
    check([c.get("name") for c in cases] == ALL_IDS, "testcase names %s" % [c.get("name") for c in cases])
    check([c.get("classname") for c in cases] ==
          ["resnet18", "resnet18", "squeezenet1.0", "squeezenet1.0", "yolov8n", "odd<&\"'>"], "classnames")
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
    check(props["executor_distribution"] == "nss:1,host:1" and props["pcc"] == "0.95" and props["wall_time"] == "9.250",
          "bf16 properties %s" % props)
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
    check(s["counts"] == {"passed": 1, "failed": 1, "skipped": 2, "xfailed": 1, "xpassed": 1}, "counts %s" % s["counts"])
    check(s["exit_code"] == 1, "exit_code 1")
    check([t["id"] for t in s["tests"]] == ALL_IDS, "test ids")
    check([t["outcome"] for t in s["tests"]] == OUTCOMES, "test outcomes")
    check(s["run"]["jobs"] == 96 and s["run"]["selected"] == 6 and s["run"]["deselected"] == 4, "run %s" % s["run"])
    t0 = s["tests"][0]
    check(t0["executor_distribution"] == {"nss": 3, "host": 1} and t0["pcc"] == 0.9998 and t0["layers"] == 4 and
          t0["report"].endswith("torq_gen_config_resnet18.json"), "first test %s" % t0)
    check(s["tests"][4]["pcc"] is None and s["tests"][4]["bringup_status"] == "NOT_STARTED", "placeholder test")


def check_real(path, summary_path, n_executors):
    """A real run's report as Chromium rendered it, against summary.json."""
    dom = Dom()
    with open(path, encoding="utf-8") as f:
        dom.feed(f.read())
    with open(summary_path, encoding="utf-8") as f:
        s = json.load(f)
    tests = s["tests"]
    body = dom.find("body")
    check(len(body) == 1 and body[0][0].get("data-ready") == "1", "body data-ready=1 (the script ran)")
    rows = dom.find("tr", "test")
    check([a.get("data-id") for a, _ in rows] == [t["id"] for t in tests], "rows are the summary's tests in order")
    check([a.get("data-outcome") for a, _ in rows] == [t["outcome"] for t in tests], "row outcomes")
    check(all("hidden" not in a for a, _ in rows), "every row visible without a filter")
    shown = [t for a, t in dom.find("span") if a.get("id") == "shown"]
    check(shown == ["%d of %d tests shown" % (len(tests), len(tests))], "#shown text: %s" % shown)
    ran = [t for t in tests if t["report"] is not None]
    grids = dom.find("details", "grid")
    check([a.get("data-id") for a, _ in grids] == [t["id"] for t in ran], "one grid per test with a report")
    cells = dom.find("td", "cell")
    for t in ran:
        mine = [(a, text) for a, text in cells if a.get("data-test") == t["id"]]
        check(len(mine) == t["layers"] * n_executors,
              "%s: %d grid cells for %d layers" % (t["id"], len(mine), t["layers"]))
        rec = [a for a, _ in mine if "recommended" in a["class"].split()]
        want = sum(n for e, n in t["executor_distribution"].items() if e != "none")
        check(len(rec) == want, "%s: %d recommended cells, summary says %d" % (t["id"], len(rec), want))
        for e, n in t["executor_distribution"].items():
            if e != "none":
                got = sum(1 for a in rec if a.get("data-executor") == e)
                check(got == n, "%s: %d cells recommend %s, summary says %d" % (t["id"], got, e, n))


def main():
    kind, path = sys.argv[1], sys.argv[2]
    if kind == "real":
        check_real(path, sys.argv[3], int(sys.argv[4]))
    elif kind == "dom":
        check_dom(path, sys.argv[3], len(sys.argv) > 4 and sys.argv[4] == "open")
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
