#!/usr/bin/python3
"""The fault suite's long classes (issue 60), outside ctest: real processes
of a build, hurt on purpose while they run, every outcome classified.

Classes (--classes, comma-separated; all by default):
  http       the status server under attack during a spec run: endless
             header lines, tricklers, a flood of idle connections, oversized
             and malformed requests; then SIGTERM with the attackers still
             attached. The run must finish with the clean run's results, the
             coordinator's RSS stay bounded, /metrics keep answering, and
             SIGTERM end it within 5 s.
  store      a corruption matrix over a finished run's RocksDB store: every
             file (SST, blob, WAL, MANIFEST, CURRENT, OPTIONS) flipped at
             seeded offsets and truncated, then the same spec rerun on it.
             Each rerun must either give the clean run's results, or stop
             with exit 2 naming the store and a repair hint and write no
             outcome, junit or history record.
  cache      a worker whose model cache cannot hold the model (a small
             tmpfs): it must turn Bad with the reason, back off, and the
             run end with a clear message instead of spinning.
  inputs     a FIFO, a directory and a device as every input and output
             (tests/cli/check_fifo_inputs.sh).
  kill       kill -9 of discover and quantize mid-run, then the same
             command again: outputs equal a clean run's, no temp file of the
             dead process left.

Each case is one of:
  handled    the behaviour above
  crash      a process died of a signal it did not ask for
  hang       still running at the time limit (killed)
  slow_exit  alive more than 5 s after SIGTERM
  unclear    an error without the file, the store or the reason named
  lost       a result missing, changed, or recorded from an infrastructure
             failure (an outcome, junit line or history record written from
             a damaged store counts here)

The table is printed at the end; exit 1 when any case is not handled.
Rerun with the same --seed for the same cases; failing cases keep their
directory under OUT/failures/.

Usage: tests/fuzz/chaos.py [--bin build/bin] [--seed 1] [--out chaos-out]
       [--classes http,store,cache,inputs,kill] [--rounds 1]
Runs as root for the cache class (it mounts a tmpfs); ~5 min on 2 cores.
"""
import argparse
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
KINDS = ["handled", "crash", "hang", "slow_exit", "unclear", "lost"]


class Tally:
    def __init__(self, out):
        self.rows = {}
        self.out = out

    def add(self, cls, kind, what, keep=None):
        row = self.rows.setdefault(cls, {k: 0 for k in KINDS})
        row[kind] += 1
        mark = "ok  " if kind == "handled" else "FAIL"
        print(f"  {mark} [{cls}] {kind}: {what}", flush=True)
        if kind != "handled" and keep and os.path.isdir(keep):
            dest = os.path.join(self.out, "failures", f"{cls}-{sum(row.values())}")
            shutil.rmtree(dest, ignore_errors=True)
            shutil.copytree(keep, dest, symlinks=True, ignore_dangling_symlinks=True)

    def table(self):
        head = f"{'class':<8} {'tried':>5} " + " ".join(f"{k:>9}" for k in KINDS)
        lines = [head, "-" * len(head)]
        for cls, row in self.rows.items():
            lines.append(f"{cls:<8} {sum(row.values()):>5} " + " ".join(f"{row[k]:>9}" for k in KINDS))
        return "\n".join(lines)

    def bad(self):
        return sum(v for row in self.rows.values() for k, v in row.items() if k != "handled")


def run(cmd, timeout, cwd=None, env=None):
    """(exit code or 'hang', combined output, seconds)."""
    start = time.monotonic()
    p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
        return p.returncode, out.decode(errors="replace"), time.monotonic() - start
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        return "hang", out.decode(errors="replace"), time.monotonic() - start


def fingerprint(export):
    """What a run decided: each test's outcome and bring-up, and each
    report's per-layer, per-executor statuses."""
    with open(os.path.join(export, "summary.json")) as f:
        summary = json.load(f)
    fp = {}
    for t in summary["tests"]:
        layers = {}
        rep = os.path.join(export, "reports", t["id"])
        for name in sorted(os.listdir(rep)) if os.path.isdir(rep) else []:
            if name.startswith("torq_gen_config_") and not name.endswith("_compiler.json"):
                with open(os.path.join(rep, name)) as f:
                    ops = json.load(f).get("ops", {})
                layers = {op: {e: r.get("status") for e, r in v.get("executors", {}).items()}
                          for op, v in ops.items()}
        fp[t["id"]] = (t["outcome"], t["bringup_status"], json.dumps(layers, sort_keys=True))
    return fp


def write_spec(work, models, timing_runs=1):
    """A spec of the demo's kind; timing_runs stretches a run that must last
    while it is attacked (each job runs its executor that many times)."""
    spec = os.path.join(work, "spec.yaml")
    with open(spec, "w") as f:
        f.write("models:\n" + "".join(f"  - {m}\n" for m in models))
        f.write("variants: [fp32, bf16]\nexecutors: [nss, css, host]\ntargets:\n  sim: {}\nmodes: [discover]\n")
        f.write(f"options: {{timing_runs: {timing_runs}}}\n")
    return spec


def coordinator_cmd(a, spec, work, extra=()):
    return [os.path.join(a.bin, "torq-coordinator"), "--spec", spec, "--local-workers", "1",
            "--export", os.path.join(work, "out"), "--db", os.path.join(work, "db"), *extra]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def open_fds(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def http_get(port, path="/metrics", timeout=3.0):
    """Status code of a plain GET, or None."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.settimeout(timeout)
            s.sendall(f"GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
            head = s.recv(64)
            return int(head.split()[1]) if head.startswith(b"HTTP/") else None
    except (OSError, ValueError, IndexError):
        return None


class Attackers:
    """Real sockets against the status server, until stop()."""

    def __init__(self, port, rng):
        self.port, self.rng = port, rng
        self.stop_flag = threading.Event()
        self.threads = []
        self.sent = 0

    def _connect(self):
        try:
            return socket.create_connection(("127.0.0.1", self.port), timeout=2)
        except OSError:
            return None

    def endless_headers(self):
        while not self.stop_flag.is_set():
            s = self._connect()
            if not s:
                time.sleep(0.05)
                continue
            try:
                s.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                line = b"X-" + b"a" * 60 + b": " + b"v" * 60 + b"\r\n"
                while not self.stop_flag.is_set():
                    s.sendall(line * 64)
                    self.sent += len(line) * 64
            except OSError:
                pass
            finally:
                s.close()

    def trickle(self):
        while not self.stop_flag.is_set():
            s = self._connect()
            if not s:
                time.sleep(0.05)
                continue
            try:
                s.sendall(b"GET / HTTP/1.1\r\n")
                while not self.stop_flag.wait(1.5):
                    s.sendall(b"X-t: 1\r\n")
            except OSError:
                pass
            finally:
                s.close()

    def idle_flood(self, n=400):
        held = []
        while not self.stop_flag.is_set():
            if len(held) < n:
                s = self._connect()
                if s:
                    held.append(s)
                    continue
            self.stop_flag.wait(0.2)
            held = [s for s in held if s.fileno() >= 0]
        for s in held:
            s.close()

    def garbage(self):
        junk = [b"\x00" * 512, b"GET " + b"/" * 70000 + b" HTTP/1.1\r\n\r\n", b"POST / HTTP/1.1\r\nContent-Length: 999999999\r\n\r\n",
                b"GET / HTTP/9.9\r\n\r\n", b"\r\n\r\n\r\n", b"GET /../../etc/passwd HTTP/1.0\r\n\r\n"]
        while not self.stop_flag.is_set():
            s = self._connect()
            if s:
                try:
                    s.sendall(self.rng.choice(junk))
                    s.settimeout(1)
                    s.recv(256)
                except OSError:
                    pass
                s.close()
            self.stop_flag.wait(0.02)

    def start(self):
        for fn in [self.endless_headers, self.endless_headers, self.trickle, self.trickle, self.trickle,
                   self.idle_flood, self.garbage]:
            t = threading.Thread(target=fn, daemon=True)
            t.start()
            self.threads.append(t)

    def stop(self):
        self.stop_flag.set()
        for t in self.threads:
            t.join(timeout=5)


def http_class(a, tally, rng, work):
    cls = "http"
    spec = write_spec(work, [a.model], a.timing_runs)
    clean = os.path.join(work, "clean")
    os.makedirs(clean)
    rc, out, _ = run(coordinator_cmd(a, spec, clean), 300)
    if rc != 0:
        tally.add(cls, "lost", f"the clean run failed (exit {rc}): {out[-300:]}", clean)
        return
    want = fingerprint(os.path.join(clean, "out"))
    # The attacked run: not a zoo-sized job count, only a run that lasts
    # while it is attacked (the spec's timing_runs).
    for r in range(a.rounds):
        attacked = os.path.join(work, f"attacked-{r}")
        os.makedirs(attacked)
        port = free_port()
        cmd = coordinator_cmd(a, spec, attacked, ["--http", f"127.0.0.1:{port}"])
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             start_new_session=True)
        deadline = time.monotonic() + 10
        while http_get(port, timeout=0.5) is None and time.monotonic() < deadline and p.poll() is None:
            time.sleep(0.05)
        base_rss = rss_kb(p.pid)
        att = Attackers(port, rng)
        att.start()
        peak_rss, peak_fds, slow_gets = base_rss, 0, 0
        while p.poll() is None:
            peak_rss, peak_fds = max(peak_rss, rss_kb(p.pid)), max(peak_fds, open_fds(p.pid))
            t0 = time.monotonic()
            if http_get(port) is None and p.poll() is None:
                slow_gets += 1
            elif time.monotonic() - t0 > 2:
                slow_gets += 1
            time.sleep(0.2)
        att.stop()
        out = p.stdout.read().decode(errors="replace")
        what = (f"run under attack: exit {p.returncode}, RSS {base_rss // 1024} -> peak {peak_rss // 1024} MB, "
                f"peak fds {peak_fds}, {att.sent // 1000000} MB of headers sent, {slow_gets} slow or failed GETs")
        if p.returncode < 0:
            tally.add(cls, "crash", what, attacked)
        elif p.returncode != 0 or fingerprint(os.path.join(attacked, "out")) != want:
            tally.add(cls, "lost", what + " (results differ from the clean run's)", attacked)
        elif peak_rss - base_rss > 200 * 1024 or "Too many open files" in out:
            tally.add(cls, "crash", what + " (grew without bound, or ran out of descriptors)", attacked)
        else:
            tally.add(cls, "handled", what)
        # SIGTERM with the attackers attached: out within 5 s.
        term = os.path.join(work, f"term-{r}")
        os.makedirs(term)
        port = free_port()
        longspec = write_spec(term, [a.model], a.timing_runs * 10)
        cmd = coordinator_cmd(a, longspec, term, ["--http", f"127.0.0.1:{port}"])
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             start_new_session=True)
        deadline = time.monotonic() + 10
        while http_get(port, timeout=0.5) is None and time.monotonic() < deadline and p.poll() is None:
            time.sleep(0.05)
        att = Attackers(port, rng)
        att.start()
        time.sleep(3)
        t0 = time.monotonic()
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=5)
            took = time.monotonic() - t0
            kind = "handled" if p.returncode in (0, 3) else ("crash" if p.returncode < 0 else "unclear")
            tally.add(cls, kind, f"SIGTERM under attack: exit {p.returncode} after {took:.1f} s")
        except subprocess.TimeoutExpired:
            tally.add(cls, "slow_exit", "SIGTERM under attack: still running 5 s later", term)
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        att.stop()


def flip(path, rng, count=1):
    size = os.path.getsize(path)
    if size == 0:
        return "empty"
    with open(path, "r+b") as f:
        offs = sorted(rng.randrange(size) for _ in range(count))
        for off in offs:
            f.seek(off)
            b = f.read(1)
            f.seek(off)
            f.write(bytes([b[0] ^ (1 << rng.randrange(8))]))
    return "flipped at " + ",".join(map(str, offs))


def truncate(path, rng):
    size = os.path.getsize(path)
    cut = 1 if rng.random() < 0.5 else rng.randrange(size + 1)
    with open(path, "r+b") as f:
        f.truncate(max(0, size - cut))
    return f"cut {cut} of {size} bytes"


def history_runs(export):
    try:
        with open(os.path.join(export, "summary.json")) as f:
            return json.load(f)["run"].get("run_id")
    except (OSError, ValueError, KeyError):
        return None


def export_state(export):
    """Each output file's bytes: a refused run may remove outputs, never write one."""
    state = {}
    for name in ("junit.xml", "summary.json"):
        path = os.path.join(export, name)
        if os.path.exists(path):
            state[name] = open(path, "rb").read()
    return state


def store_class(a, tally, rng, work):
    cls = "store"
    spec = write_spec(work, [a.model])
    clean = os.path.join(work, "clean")
    os.makedirs(clean)
    rc, out, _ = run(coordinator_cmd(a, spec, clean), 300)
    if rc != 0:
        tally.add(cls, "lost", f"the clean run failed (exit {rc}): {out[-300:]}", clean)
        return
    want = fingerprint(os.path.join(clean, "out"))
    db = os.path.join(clean, "db")
    files = sorted(f for f in os.listdir(db) if os.path.isfile(os.path.join(db, f)) and f not in ("LOCK", "LOG")
                   and not f.startswith("LOG.old"))
    cases = []
    for f in files:
        for _ in range(a.rounds):
            cases.append((f, "flip"))
        cases.append((f, "truncate"))
    for f, how in cases:
        case = os.path.join(work, f"{f}-{how}-{len(os.listdir(work))}")
        shutil.copytree(clean, case)
        target = os.path.join(case, "db", f)
        said = flip(target, rng, 1 + rng.randrange(3)) if how == "flip" else truncate(target, rng)
        export = os.path.join(case, "out")
        before = export_state(export)
        rc, out, _ = run(coordinator_cmd(a, spec, case), 120)
        what = f"{f} {said}: exit {rc}"
        if rc == "hang":
            tally.add(cls, "hang", what, case)
        elif isinstance(rc, int) and rc < 0:
            tally.add(cls, "crash", what + " " + out[-200:], case)
        elif rc == 0:
            if fingerprint(export) == want:
                tally.add(cls, "handled", what + " (harmless: the clean run's results)")
            else:
                tally.add(cls, "lost", what + " (exit 0 with other results)", case)
        elif rc == 2:
            named = ("store" in out or "db" in out) and ("hint" in out.lower() or "repair" in out.lower() or "remove" in out.lower()
                                                           or "recompute" in out.lower())
            after = export_state(export)
            if any(after[f] != before.get(f) for f in after):
                tally.add(cls, "lost", what + " (an outcome was written from the damaged store)", case)
            elif not named:
                tally.add(cls, "unclear", what + ": " + out.strip().splitlines()[-1][:200] if out.strip() else what,
                          case)
            else:
                tally.add(cls, "handled", what + " (refused: " + out.strip().splitlines()[-1][:120] + ")")
        else:
            tally.add(cls, "lost", what + " (a test outcome from store damage): " + out[-200:], case)
        if rc in (0, 2) or rc == "hang":
            shutil.rmtree(case, ignore_errors=True)


def cache_class(a, tally, rng, work):
    cls = "cache"
    mnt = os.path.join(work, "small-cache")
    os.makedirs(mnt)
    # Room for the 64 KiB health probe, not for the model (one of the shared
    # models beside a checkout when there, the demo's 28 KiB would fit).
    shared = os.path.join(os.path.dirname(ROOT), "shared", "models", "mobilenetv2", "model.onnx")
    model = shared if os.path.exists(shared) else a.model
    size = max(128 * 1024, os.path.getsize(model) // 2)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", mnt]).returncode != 0:
        tally.add(cls, "unclear", "cannot mount a tmpfs here (run as root)")
        return
    try:
        port = free_port()
        # A spec run that gives up on a fleet with no usable worker after 10 s
        # (a --model run always waits for one).
        spec = write_spec(work, [model])
        with open(spec, "a") as f:
            f.write("options: {missing_tags: fail, missing_tags_wait_s: 10}\n".replace("options: {", "", 0))
        text = open(spec).read().replace("options: {timing_runs: 1}\n", "")
        with open(spec, "w") as f:
            f.write(text)
        coord = subprocess.Popen([os.path.join(a.bin, "torq-coordinator"), "--spec", spec, "--bind",
                                  f"tcp://127.0.0.1:{port}", "--db", os.path.join(work, "db"), "--export",
                                  os.path.join(work, "out")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, start_new_session=True)
        worker = subprocess.Popen([os.path.join(a.bin, "torq-worker"), "--connect", f"tcp://127.0.0.1:{port}",
                                   "--cache", mnt], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, start_new_session=True)
        t0 = time.monotonic()
        try:
            coord.wait(timeout=90)
        except subprocess.TimeoutExpired:
            pass
        took = time.monotonic() - t0
        cpu = {}
        for name, p in (("coordinator", coord), ("worker", worker)):
            try:
                with open(f"/proc/{p.pid}/stat") as f:
                    st = f.read().rsplit(")", 1)[1].split()
                cpu[name] = (int(st[11]) + int(st[12])) / os.sysconf("SC_CLK_TCK")
            except OSError:
                cpu[name] = None
        for p in (worker, coord):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait()
        cout = coord.stdout.read().decode(errors="replace")
        wout = worker.stdout.read().decode(errors="replace")
        flips = wout.count("Unknown") + cout.count("Unknown")
        what = (f"cache-full worker: coordinator exit {coord.returncode} after {took:.0f} s, "
                f"{flips} 'Unknown' lines, log {len(wout) + len(cout)} bytes")
        if took >= 90:
            tally.add(cls, "hang", what + " (the run did not end)", work)
        elif "Bad" not in cout + wout or ("room" not in (cout + wout) and "space" not in (cout + wout)):
            tally.add(cls, "unclear", what + " (the worker never turned Bad with the reason)", work)
        elif flips > 20 or len(wout) + len(cout) > 200000:
            tally.add(cls, "hang", what + " (it spun)", work)
        else:
            tally.add(cls, "handled", what)
    finally:
        subprocess.run(["umount", "-l", mnt])


def inputs_class(a, tally, rng, work):
    script = os.path.join(ROOT, "tests", "cli", "check_fifo_inputs.sh")
    rc, out, took = run([script, a.bin, a.model, work], 300)
    for line in out.splitlines():
        if line.startswith("ok "):
            tally.add("inputs", "handled", line[3:])
        elif line.startswith("FAIL (hung"):
            tally.add("inputs", "hang", line)
        elif line.startswith("FAIL"):
            tally.add("inputs", "unclear", line)
    if rc not in (0, 1):
        tally.add("inputs", "hang" if rc == "hang" else "crash", f"check_fifo_inputs.sh exit {rc}")


def temp_files(d):
    found = []
    for root, _, files in os.walk(d):
        found += [os.path.join(root, f) for f in files if ".tmp" in f or f.startswith("tmp-")]
    return found


def kill_class(a, tally, rng, work):
    cls = "kill"
    gen = os.path.join(a.bin, "torq-gen-config")
    cmds = {
        "discover": lambda d: [gen, "discover", "--model", a.model, "--auto-convert-bf16", "--output-dir", d,
                               "--timing-runs", "50"],
        "quantize": lambda d: [gen, "quantize", "--model", a.model, "--output-dir", d, "--num-calib", "64"],
    }
    for name, cmd in cmds.items():
        clean = os.path.join(work, f"{name}-clean")
        rc, out, took = run(cmd(clean), 300)
        if rc not in (0, 1):
            tally.add(cls, "lost", f"{name}: the clean run exited {rc}", clean)
            continue
        for r in range(a.rounds * 2):
            d = os.path.join(work, f"{name}-{r}")
            p = subprocess.Popen(cmd(d), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                 stdin=subprocess.DEVNULL, start_new_session=True)
            time.sleep(rng.uniform(0.05, max(0.1, took * 0.9)))
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            rc, out, _ = run(cmd(d), 300)
            left = temp_files(d)
            what = f"{name} killed, rerun exit {rc}, {len(left)} temp files left"
            if rc == "hang":
                tally.add(cls, "hang", what, d)
            elif isinstance(rc, int) and rc < 0:
                tally.add(cls, "crash", what, d)
            elif rc not in (0, 1):
                tally.add(cls, "unclear", what + ": " + out[-200:], d)
            elif left:
                tally.add(cls, "lost", what + ": " + ", ".join(os.path.relpath(x, d) for x in left[:3]), d)
            else:
                tally.add(cls, "handled", what)


CLASSES = {"http": http_class, "store": store_class, "cache": cache_class, "inputs": inputs_class,
           "kill": kill_class}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    ap.add_argument("--model", default=os.path.join(ROOT, "build", "models", "demo.onnx"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--out", default="chaos-out")
    ap.add_argument("--timing-runs", type=int, default=300,
                    help="timing runs per job of the http class's runs (how long they last)")
    ap.add_argument("--classes", default=",".join(CLASSES))
    a = ap.parse_args()
    a.bin, a.model, a.out = os.path.abspath(a.bin), os.path.abspath(a.model), os.path.abspath(a.out)
    shutil.rmtree(a.out, ignore_errors=True)
    os.makedirs(a.out)
    tally = Tally(a.out)
    rng = random.Random(a.seed)
    load = open("/proc/loadavg").read().split()[:3]
    print(f"== chaos: seed {a.seed}, rounds {a.rounds}, {os.cpu_count()} cores, load {' '.join(load)}", flush=True)
    for name in a.classes.split(","):
        if name not in CLASSES:
            sys.exit(f"chaos.py: unknown class '{name}' (known: {', '.join(CLASSES)})")
        print(f"-- {name}", flush=True)
        work = os.path.join(a.out, name)
        os.makedirs(work)
        CLASSES[name](a, tally, rng, work)
    print(tally.table())
    print(f"== end, load {' '.join(open('/proc/loadavg').read().split()[:3])}")
    return 1 if tally.bad() else 0


if __name__ == "__main__":
    sys.exit(main())
