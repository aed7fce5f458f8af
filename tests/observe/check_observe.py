#!/usr/bin/python3
"""The farm, observed (issue 33), with real processes: a torq-coordinator
running the quickstart matrix with --http, a torq-worker that takes its jobs
slowly (--bench-executor sleep:MS: the run lasts long enough to be watched),
Prometheus's own parser (python3-prometheus-client) reading /metrics,
headless Chromium loading the live page (a screenshot kept), `status --http`,
the bearer token, and the live progress line on a pseudo-terminal.

Usage: check_observe.py BIN_DIR SOURCE_DIR DEMO_ONNX ARTIFACT_DIR
"""
import json
import os
import pty
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

BIN, SRC, DEMO, OUT = (os.path.abspath(a) for a in sys.argv[1:5])
COORD = os.path.join(BIN, "torq-coordinator")
WORKER = os.path.join(BIN, "torq-worker")
CHROMIUM = "/usr/bin/chromium"
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_spec(d):
    """The quickstart spec and its test_config, naming the built demo model."""
    os.makedirs(os.path.join(d, "test_config"), exist_ok=True)
    shutil.copy(os.path.join(SRC, "configs/test_config/quickstart.yaml"), os.path.join(d, "test_config"))
    with open(os.path.join(SRC, "configs/quickstart.yaml")) as f:
        spec = f.read().replace("../build/models/demo.onnx", DEMO)
    path = os.path.join(d, "spec.yaml")
    with open(path, "w") as f:
        f.write(spec)
    return path


def start_coordinator(name, spec, extra, env_extra=None):
    d = os.path.join(OUT, name)
    env = dict(os.environ, TORQ_PROGRESS_MS="300")
    env.pop("TERM", None)
    env.update(env_extra or {})
    err = open(os.path.join(d, "coordinator.err"), "w")
    p = subprocess.Popen([COORD, "--spec", spec, "--export", os.path.join(d, "out")] + extra,
                         stdout=open(os.path.join(d, "coordinator.out"), "w"), stderr=err, env=env)
    return p, os.path.join(d, "coordinator.err")


def wait_for_url(p, err_file, timeout=30):
    t0 = time.time()
    while time.time() - t0 < timeout:
        m = re.search(r"status on (http://[^/ ]+)/", open(err_file).read())
        if m:
            return m.group(1).replace("0.0.0.0", "127.0.0.1")
        if p.poll() is not None:
            break
        time.sleep(0.05)
    raise SystemExit("FAIL: no 'status on http://...' line in " + err_file + ":\n" + open(err_file).read())


def get(url, token=None, host=None):
    headers = {"Authorization": "Bearer " + token} if token else {}
    if host:
        headers["Host"] = host
    req = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode(), r.headers.get("Content-Type", "")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(), e.headers.get("Content-Type", "")


def status(url, token=None):
    code, body, _ = get(url + "/api/status", token)
    assert code == 200, (code, body)
    return json.loads(body)


def wait_status(url, cond, what, timeout=60):
    t0 = time.time()
    while time.time() - t0 < timeout:
        s = status(url)
        if cond(s):
            return s
        time.sleep(0.1)
    raise SystemExit("FAIL: timed out waiting for " + what + ": " + json.dumps(s)[:2000])


def metrics(url):
    code, body, ctype = get(url + "/metrics")
    check(code == 200 and ctype.startswith("text/plain; version=0.0.4"), "/metrics is Prometheus text 0.0.4: " + ctype)
    samples = {}
    for fam in text_string_to_metric_families(body):
        for s in fam.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples


def sample(m, name, **labels):
    return m.get((name, tuple(sorted(labels.items()))))


def chrome(*args):
    prof = os.path.join(OUT, "chromium-profile")
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                           "--disable-background-networking", "--no-first-run", "--user-data-dir=" + prof] + list(args),
                          capture_output=True, text=True, timeout=60)


def check_idle_fleet(url):
    """No worker yet: the jobs wait in the queue, and every view says so."""
    s = wait_status(url, lambda s: s["run"]["phase"] == "running" and s["progress"]["jobs_queued"] > 0,
                    "jobs queued with no worker")
    check(s["workers"] == [], "no worker registered yet")
    code, _, _ = get(url + "/api/status", host="status.example.net:80")
    check(code == 403, "a request naming another Host (DNS rebinding) gets 403 without a token (%d)" % code)
    check(s["progress"]["tests_total"] == 2 and s["progress"]["tests_done"] == 0, "2 tests, none done")
    check(s["progress"]["jobs_done"] == 0 and s["progress"]["jobs_estimate"] > 0,
          "no job done, %d estimated" % s["progress"]["jobs_estimate"])
    check({t["state"] for t in s["tests"]} == {"running"}, "both tests running (their models prepared)")
    m = metrics(url)
    check(sample(m, "torq_jobs", state="queued") == s["progress"]["jobs_queued"], "torq_jobs{queued} = the JSON's")
    check(sample(m, "torq_dispatch_latency_seconds_count") == 0, "no dispatch latency yet")


def check_busy_fleet(url):
    """A worker taking jobs: the live page, the metrics and `status` show it at work."""
    s = wait_status(url, lambda s: s["progress"]["jobs_done"] >= 10 and s["workers"] and s["workers"][0]["done"] > 0,
                    "10 jobs done by w1")
    w = s["workers"][0]
    check(w["id"] == "w1" and w["health"] == "Good" and w["connected"], "w1 registered and Good: " + str(w))
    check(s["progress"]["jobs_per_s"] > 0 and s["progress"]["eta_s"] is not None, "a rate and an ETA")
    m = metrics(url)
    done = sample(m, "torq_jobs", state="done")
    results = sum(v for (n, _), v in m.items() if n == "torq_results_total")
    check(done is not None and results == done, "results by status and executor add up to jobs done (%s, %s)" % (results, done))
    check(sample(m, "torq_worker_up", worker="w1", target="sim") == 1, "torq_worker_up{w1} 1")
    check(sample(m, "torq_worker_health", worker="w1", health="Good") == 1, "torq_worker_health{w1,Good} 1")
    check(sample(m, "torq_worker_health", worker="w1", health="Bad") == 0, "torq_worker_health{w1,Bad} 0")
    buckets = sorted((float(dict(l)["le"]), v) for (n, l), v in m.items() if n == "torq_dispatch_latency_seconds_bucket")
    count = sample(m, "torq_dispatch_latency_seconds_count")
    check(count > 0 and buckets[-1][1] == count and all(a[1] <= b[1] for a, b in zip(buckets, buckets[1:])),
          "latency histogram cumulative, +Inf = count = %s" % count)
    # sleep:150 jobs: no latency under 0.1 s, all under 1 s.
    le = dict(buckets)
    check(le[0.1] == 0 and le[1.0] == count, "latencies between 0.1 and 1 s (sleep:150 jobs)")
    check(sample(m, "process_resident_memory_bytes") > 10e6 and sample(m, "torq_store_disk_bytes") > 0,
          "RSS and store size reported")
    # The live page in a real browser.
    dom = chrome("--dump-dom", url + "/").stdout
    open(os.path.join(OUT, "live-dom.html"), "w").write(dom)
    check(re.search(r'<tr class="worker" data-worker="w1" data-health="Good">', dom) is not None, "live page lists w1, Good")
    jd = re.search(r'id="progress" data-jobs-done="(\d+)"', dom)
    check(jd is not None and int(jd.group(1)) >= 10, "live page shows jobs done")
    check(re.search(r'<progress id="job-progress" value="\d+" max="\d+"', dom) is not None, "live page has a progress bar")
    check('http-equiv="refresh"' in dom, "live page refreshes itself")
    chrome("--screenshot=" + os.path.join(OUT, "live.png"), "--window-size=1400,900", url + "/")
    png = open(os.path.join(OUT, "live.png"), "rb").read() if os.path.exists(os.path.join(OUT, "live.png")) else b""
    check(png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10000, "live page screenshot (%d bytes)" % len(png))
    # `status --http` in a terminal, and as JSON.
    r = subprocess.run([COORD, "status", "--http", url], capture_output=True, text=True, timeout=30)
    check(r.returncode == 0 and re.search(r"^  w1  Good  target sim  done \d+", r.stdout, re.M) is not None
          and "progress  tests " in r.stdout, "status --http prints w1 and the progress:\n" + r.stdout + r.stderr)
    r = subprocess.run([COORD, "status", "--http", url, "--json"], capture_output=True, text=True, timeout=30)
    check(r.returncode == 0 and json.loads(r.stdout)["workers"][0]["id"] == "w1", "status --http --json")


def check_log(err_file):
    log = open(err_file).read()
    phases = re.findall(r"\[coordinator\] phase: (\w+)", log)
    check(phases == ["preparing", "running", "exporting", "done"], "phase lines in order: " + str(phases))
    check(re.search(r"^\[coordinator\] test 1/2: (passed|failed) +demo-", log, re.M) is not None
          and re.search(r"^\[coordinator\] test 2/2: ", log, re.M) is not None, "a line per test as it finishes")
    prog = re.findall(r"^\[progress\] torq-coordinator: running \| tests \d+/2 \| jobs \d+/~?\d+ \(\d+%\) \| "
                      r"[0-9.]+ jobs/s \| ETA (\S+) \(\d+ s\)$", log, re.M)
    check(len(prog) >= 3 and any(e != "-" for e in prog), "plain progress lines with jobs/s and ETA (%d)" % len(prog))


def main_run():
    d = os.path.join(OUT, "main")
    os.makedirs(d)
    spec = write_spec(d)
    port = free_port()
    p, err = start_coordinator("main", spec, ["--bind", "tcp://127.0.0.1:%d" % port, "--http", "127.0.0.1:0"])
    url = wait_for_url(p, err)
    worker = None
    try:
        check_idle_fleet(url)
        worker = subprocess.Popen([WORKER, "--connect", "tcp://127.0.0.1:%d" % port, "--id", "w1",
                                   "--bench-executor", "sleep:150"],
                                  stdout=subprocess.DEVNULL, stderr=open(os.path.join(d, "worker.err"), "w"))
        check_busy_fleet(url)
        rc = p.wait(timeout=120)
        check(rc in (0, 1), "the run completed (exit %d)" % rc)
    finally:
        for proc in (p, worker):
            if proc and proc.poll() is None:
                proc.kill()
    check_log(err)
    r = subprocess.run([COORD, "status", "--http", url], capture_output=True, text=True, timeout=30)
    check(r.returncode == 2 and "cannot reach " + url in r.stderr, "status of a finished run: cannot reach: " + r.stderr)


def token_run():
    """A non-loopback address needs a token; every request without it gets 401."""
    d = os.path.join(OUT, "token")
    os.makedirs(d)
    spec = write_spec(d)
    r = subprocess.run([COORD, "--spec", spec, "--export", os.path.join(d, "x"), "--http", "0.0.0.0:0"],
                       capture_output=True, text=True, timeout=30)
    check(r.returncode == 2 and "not a loopback address; give --http-token FILE" in r.stderr, "0.0.0.0 without token refused")
    r = subprocess.run([COORD, "--spec", spec, "--export", os.path.join(d, "x"), "--http", "localhost"],
                       capture_output=True, text=True, timeout=30)
    check(r.returncode == 2 and "want HOST:PORT" in r.stderr, "an address without a port refused")
    t0 = time.time()
    r = subprocess.run([COORD, "--spec", os.path.join(d, "no-such.yaml"), "--export", os.path.join(d, "x"), "--http",
                        "127.0.0.1:0"], capture_output=True, text=True, timeout=30)
    check(r.returncode == 2 and "status on http://" in r.stderr and time.time() - t0 < 10,
          "a run that ends at once stops its server and exits (%d, %.1f s)" % (r.returncode, time.time() - t0))
    short = os.path.join(d, "short.token")
    open(short, "w").write("abc\n")
    r = subprocess.run([COORD, "--spec", spec, "--export", os.path.join(d, "x"), "--http", "127.0.0.1:0",
                        "--http-token", short], capture_output=True, text=True, timeout=30)
    check(r.returncode == 2 and short + ":1: the token is shorter than 16 characters" in r.stderr, "a short token refused")
    token = "s3cret-token-0123456789abcdef"
    tf = os.path.join(d, "good.token")
    open(tf, "w").write(token + "\n")
    p, err = start_coordinator("token", spec, ["--bind", "tcp://127.0.0.1:%d" % free_port(), "--http", "0.0.0.0:0",
                                               "--http-token", tf])
    url = wait_for_url(p, err)
    try:
        for path in ("/", "/metrics", "/api/status", "/nothing"):
            code, _, _ = get(url + path)
            check(code == 401, "GET %s without a token: 401 (%d)" % (path, code))
            code, _, _ = get(url + path, token + "x")
            check(code == 401, "GET %s with a wrong token: 401 (%d)" % (path, code))
        code, _, _ = get(url + "/api/status", token)
        check(code == 200, "GET /api/status with the token: 200")
        code, _, _ = get(url + "/nothing", token)
        check(code == 404, "GET /nothing with the token: 404")
        r = subprocess.run([COORD, "status", "--http", url], capture_output=True, text=True, timeout=30)
        check(r.returncode == 2 and "answered 401" in r.stderr, "status without the token: 401: " + r.stderr)
        r = subprocess.run([COORD, "status", "--http", url, "--http-token", tf], capture_output=True, text=True, timeout=30)
        check(r.returncode == 0 and "phase     " in r.stdout, "status with the token")
        p.send_signal(signal.SIGTERM)
        rc = p.wait(timeout=60)
        check(rc == 3, "SIGTERM: stopped early (exit %d)" % rc)
    finally:
        if p.poll() is None:
            p.kill()
    check("[coordinator] phase: stopped" in open(err).read(), "phase: stopped logged")


def read_pty(fd, proc, timeout):
    data = b""
    t0 = time.time()
    while time.time() - t0 < timeout:
        r, _, _ = select.select([fd], [], [], 0.2)
        if r:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            data += chunk
        elif proc.poll() is not None:
            break
    return data.decode(errors="replace")


def live_terminal_run():
    """On a terminal the progress line is redrawn in place, and log lines never land on it."""
    d = os.path.join(OUT, "tty")
    os.makedirs(d)
    spec = write_spec(d)
    port = free_port()
    master, slave = pty.openpty()
    env = dict(os.environ, TERM="xterm")
    env.pop("TORQ_PROGRESS_MS", None)
    p = subprocess.Popen([COORD, "--spec", spec, "--export", os.path.join(d, "out"), "--bind",
                          "tcp://127.0.0.1:%d" % port], stdin=slave, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    w = subprocess.Popen([WORKER, "--connect", "tcp://127.0.0.1:%d" % port, "--id", "w1", "--bench-executor", "sleep:40"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        text = read_pty(master, p, 120)
        rc = p.wait(timeout=30)
    finally:
        for proc in (p, w):
            if proc.poll() is None:
                proc.kill()
    open(os.path.join(OUT, "tty.txt"), "w").write(text)
    check(rc in (0, 1), "tty run completed (exit %d)" % rc)
    live = re.findall(r"\r\x1b\[K\[progress\] torq-coordinator: running \| tests \d/2 \| jobs \d+/~?\d+", text)
    check(len(live) >= 2, "the live line drawn in place at least twice (%d)" % len(live))
    check(re.search(r"\[progress\][^\n\r]*\n", text) is None, "the live line is never ended by a newline")
    stray = [m.start() for m in re.finditer(r"\[coordinator\]", text)
             if not (m.start() == 0 or text[m.start() - 1] == "\n" or text[max(0, m.start() - 4):m.start()] == "\r\x1b[K")]
    check(not stray, "every log line starts on a cleared line (%d do not)" % len(stray))


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    if not os.access(CHROMIUM, os.X_OK):
        raise SystemExit("FAIL: %s missing (Debian package chromium, ci/install-deps.sh)" % CHROMIUM)
    main_run()
    token_run()
    live_terminal_run()
    print("observe checks: " + ("ok" if not failures else "FAILED: %d" % len(failures)))
    sys.exit(1 if failures else 0)


main()
