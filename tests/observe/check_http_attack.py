#!/usr/bin/python3
"""The status server under attack, and `status --http` against a hostile
server (issue 60, findings 1, 2 and 8), with real processes and sockets: a
torq-coordinator running demo.onnx with --http on port 0 (a torq-worker
answering each job after a sleep, so the run lasts while it is attacked),
attacked from this script.

  headers   endless header lines, never the blank line: 431 or a close, RSS
            bounded; 64 headers served, 65 refused; a head past 8 KiB 431
  trickle   three clients trickling a header line every 2 s: /metrics still
            answers at once, and each trickler is cut by the 5 s deadline
  sigterm   tricklers and idle connections attached: SIGTERM ends the
            coordinator within 3 s
  conncap   300 connections held and reopened for the whole run (descriptor
            limit 256): the extras get 503 or a close, the coordinator's
            descriptors stay bounded, the run finishes with exit 0 and no
            "Too many open files"
  client    `status --http` against a fake server here: an endless chunked
            body, an endless plain body, a huge Content-Length, a trickled
            head: exit 2 with a clear message, within its deadline, in
            bounded memory

Usage: check_http_attack.py BIN_DIR DEMO_ONNX ARTIFACT_DIR CASE
"""
import os
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

BIN, DEMO, OUT = (os.path.abspath(a) for a in sys.argv[1:4])
CASE = sys.argv[4]
COORD = os.path.join(BIN, "torq-coordinator")
WORKER = os.path.join(BIN, "torq-worker")
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failures.append(what)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mb(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"VmRSS:\s+(\d+) kB", f.read()).group(1)) / 1024


def fd_count(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


class Run:
    """A coordinator on demo.onnx with --http 127.0.0.1:0 and, unless
    sleep_ms is None, a worker answering each of its 42 jobs after sleep_ms."""

    def __init__(self, sleep_ms, nofile=None):
        self.dir = os.path.join(OUT, CASE)
        os.makedirs(self.dir)
        port = free_port()
        self.err_path = os.path.join(self.dir, "coordinator.err")

        def limit():
            if nofile:
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

        self.p = subprocess.Popen([COORD, "--model", DEMO, "--db", os.path.join(self.dir, "db"), "--export",
                                   os.path.join(self.dir, "out"), "--bind", "tcp://127.0.0.1:%d" % port,
                                   "--http", "127.0.0.1:0"],
                                  stdout=open(os.path.join(self.dir, "coordinator.out"), "w"),
                                  stderr=open(self.err_path, "w"), preexec_fn=limit)
        self.worker = None
        if sleep_ms is not None:
            self.worker = subprocess.Popen([WORKER, "--connect", "tcp://127.0.0.1:%d" % port, "--id", "w1",
                                            "--bench-executor", "sleep:%d" % sleep_ms],
                                           stdout=subprocess.DEVNULL,
                                           stderr=open(os.path.join(self.dir, "worker.err"), "w"))
        t0 = time.time()
        while time.time() - t0 < 20:
            m = re.search(r"status on http://127\.0\.0\.1:(\d+)/", self.log())
            if m:
                self.port = int(m.group(1))
                return
            if self.p.poll() is not None:
                break
            time.sleep(0.05)
        raise SystemExit("FAIL: no 'status on' line:\n" + self.log())

    def log(self):
        return open(self.err_path).read()

    def close(self):
        for proc in (self.p, self.worker):
            if proc and proc.poll() is None:
                proc.kill()
                proc.wait()


def connect(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    return s


def get(port, path="/metrics", extra=b"", timeout=5):
    """A GET; (status, seconds taken), status None when no reply came."""
    t0 = time.time()
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    except OSError:
        return None, time.time() - t0
    try:
        s.sendall(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n" + extra + b"\r\n")
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    finally:
        s.close()
    m = re.match(rb"HTTP/1\.[01] (\d{3}) ", data)
    return (int(m.group(1)) if m else None), time.time() - t0


def read_reply(s, timeout):
    """Whatever comes until the peer closes (or resets), within timeout: (bytes, closed)."""
    s.settimeout(timeout)
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return data, True
            data += chunk
    except socket.timeout:
        return data, False
    except OSError:
        return data, True


class Trickler(threading.Thread):
    """A GET whose head comes a line every `every` s, never ended; records when the server cut it."""

    def __init__(self, port, every=2.0):
        super().__init__(daemon=True)
        self.s = connect(port)
        self.every = every
        self.t0 = time.time()
        self.cut_after = None
        self.reply = b""
        self.stop = False

    def run(self):
        self.s.settimeout(self.every)
        try:
            self.s.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            n = 0
            while not self.stop:
                try:
                    chunk = self.s.recv(4096)
                    if not chunk:
                        break
                    self.reply += chunk
                except socket.timeout:
                    n += 1
                    self.s.sendall(b"X-Trickle-%d: v\r\n" % n)
        except OSError:
            pass
        if not self.stop:
            self.cut_after = time.time() - self.t0


def case_headers():
    run = Run(sleep_ms=150)
    try:
        pid = run.p.pid
        rss0 = rss_mb(pid)
        # Endless header lines, as fast as this script can send them, for 6 s,
        # reconnecting each time the server cuts the connection.
        line = b"".join(b"X-%d: v\r\n" % i for i in range(1000))
        sent = peak = 0
        cuts = replies = 0
        t0 = time.time()
        while time.time() - t0 < 6:
            s = connect(run.port)
            s.settimeout(1)
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            try:
                while time.time() - t0 < 6:
                    s.sendall(line)
                    sent += len(line)
                    peak = max(peak, rss_mb(pid) - rss0) if sent % (len(line) * 64) == 0 else peak
            except socket.timeout:
                check(False, "the endless-header connection neither cut nor read (send blocked 1 s)")
                break
            except OSError:
                cuts += 1
                data, _ = read_reply(s, 1)
                replies += data.startswith(b"HTTP/1.1 431 ")
            s.close()
        peak = max(peak, rss_mb(pid) - rss0)
        print("sent %.0f MB of header lines over %d connections (%d read their 431); RSS grew %.1f MB"
              % (sent / 1e6, cuts, replies, peak))
        check(cuts >= 5, "the server cut the endless-header connections (%d cuts in 6 s)" % cuts)
        check(peak < 100, "the coordinator's RSS grew < 100 MB (%.1f MB)" % peak)
        # The limits, exactly.
        ok = b"".join(b"X-%d: v\r\n" % i for i in range(63))  # + Host = 64
        check(get(run.port, extra=ok)[0] == 200, "64 header lines: 200")
        check(get(run.port, extra=ok + b"X-64: v\r\n")[0] == 431, "65 header lines: 431")
        check(get(run.port, extra=b"X-Big: " + b"a" * 9000 + b"\r\n")[0] == 431, "a 9 KB head: 431")
        check(get(run.port, extra=b"Host: 127.0.0.1\r\n")[0] == 400, "two Host headers: 400")
        rc = run.p.wait(timeout=30)
        check(rc == 0, "the run finished (exit %d)" % rc)
    finally:
        run.close()


def case_trickle():
    run = Run(sleep_ms=300)
    try:
        ticklers = [Trickler(run.port) for _ in range(3)]
        for t in ticklers:
            t.start()
        time.sleep(0.5)
        for i in range(4):
            status, took = get(run.port, timeout=3)
            check(status == 200 and took < 1.5, "GET /metrics beside 3 tricklers: %s in %.2f s" % (status, took))
            time.sleep(0.5)
        for t in ticklers:
            t.join(timeout=10)
        cuts = [t.cut_after for t in ticklers]
        check(all(c is not None and 4.5 < c < 7.5 for c in cuts),
              "each trickler cut by the 5 s deadline: %s s" % ", ".join("%.1f" % c if c else "never" for c in cuts))
        check(all(t.reply.startswith(b"HTTP/1.1 408 ") for t in ticklers), "and answered 408")
    finally:
        run.close()


def case_sigterm():
    run = Run(sleep_ms=None)  # no worker: no lease to wait for; the run waits on its queue
    try:
        ticklers = [Trickler(run.port) for _ in range(3)]
        for t in ticklers:
            t.start()
        idle = [connect(run.port) for _ in range(20)]
        half = connect(run.port)
        half.sendall(b"GET /api/status HTTP/1.1\r\nHost: 127.")
        time.sleep(1)
        t0 = time.time()
        run.p.send_signal(signal.SIGTERM)
        try:
            rc = run.p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            rc = None
        took = time.time() - t0
        check(rc == 3 and took < 3, "SIGTERM with 3 tricklers, 20 idle and 1 half-sent connection: exit %s in %.1f s"
              % (rc, took))
        for s in idle + [half]:
            s.close()
        for t in ticklers:
            t.stop = True
    finally:
        run.close()


def case_conncap():
    run = Run(sleep_ms=150, nofile=256)
    try:
        pid = run.p.pid
        time.sleep(0.3)
        base = fd_count(pid)
        held, refused, peak = [], 0, [base]

        def sample():  # the coordinator's descriptors every 20 ms, until it exits
            while run.p.poll() is None:
                try:
                    peak[0] = max(peak[0], fd_count(pid))
                except OSError:
                    break
                time.sleep(0.02)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        t0 = time.time()
        # Keep 300 connections open (reopening those the server closes) until the run ends.
        while run.p.poll() is None and time.time() - t0 < 25:
            while len(held) < 300:
                try:
                    held.append(socket.create_connection(("127.0.0.1", run.port), timeout=2))
                except OSError:
                    break
            for s in list(held):
                s.setblocking(False)
                try:
                    data = s.recv(4096)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                if not data or data.startswith(b"HTTP/1.1 503 ") or data.startswith(b"HTTP/1.1 408 "):
                    refused += data.startswith(b"HTTP/1.1 503 ") or not data
                    s.close()
                    held.remove(s)
            time.sleep(0.05)
        rc = run.p.wait(timeout=30)
        sampler.join()
        peak = peak[0]
        for s in held:
            s.close()
        print("descriptors: %d before, at most %d under 300 connections; %d connections refused or closed"
              % (base, peak, refused))
        check(refused >= 268, "connections beyond the cap get 503 or a close (%d)" % refused)
        check(peak <= base + 32 + 8, "the coordinator's descriptors stay bounded: %d <= %d + 40" % (peak, base))
        log = run.log() + open(os.path.join(run.dir, "coordinator.out")).read()
        check(rc == 0 and "Too many open files" not in log, "the run finished with exit 0 (%d), no 'Too many open files'"
              % rc)
    finally:
        run.close()


class FakeServer(threading.Thread):
    """One connection at a time on 127.0.0.1: reads the request, then `behave(sock)`."""

    def __init__(self, behave):
        super().__init__(daemon=True)
        self.ls = socket.socket()
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(8)
        self.url = "http://127.0.0.1:%d" % self.ls.getsockname()[1]
        self.behave = behave
        self.request = b""

    def run(self):
        while True:
            c, _ = self.ls.accept()
            try:
                while b"\r\n\r\n" not in self.request:
                    self.request += c.recv(4096)
                self.behave(c)
            except OSError:
                pass
            c.close()


def endless_chunked(c):
    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
    chunk = b"10000\r\n" + b" " * 0x10000 + b"\r\n"
    while True:
        c.sendall(chunk)


def endless_plain(c):
    c.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n")
    while True:
        c.sendall(b"[" * 65536)


def huge_length(c):
    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000000000\r\n\r\n")
    while True:
        c.sendall(b" " * 65536)


def trickled_head(c):
    c.sendall(b"HTTP/1.1 200 OK\r\n")
    n = 0
    while True:
        time.sleep(1)
        n += 1
        c.sendall(b"X-Slow-%d: v\r\n" % n)


def status_against(behave, what, expect, within):
    srv = FakeServer(behave)
    srv.start()
    t0 = time.time()
    p = subprocess.Popen([COORD, "status", "--http", srv.url], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = p.communicate(timeout=within + 10)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
    took = time.time() - t0
    err = err.decode(errors="replace")
    check(p.returncode == 2 and re.search(expect, err) is not None and took < within,
          "%s: exit %s in %.1f s (< %.0f s): %s" % (what, p.returncode, took, within, err.strip()[:300]))
    check(b"GET /api/status HTTP/1.0\r\n" in srv.request, "%s: an HTTP/1.0 request" % what)
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # the largest child so far, MB


def case_client():
    peak = 0.0
    peak = max(peak, status_against(endless_chunked, "an endless chunked body", r"the reply passed 8 MiB", 5))
    peak = max(peak, status_against(endless_plain, "an endless plain body", r"the reply passed 8 MiB", 5))
    peak = max(peak, status_against(huge_length, "Content-Length 100 GB", r"announces 100000000000 bytes", 5))
    peak = max(peak, status_against(trickled_head, "a head trickled a line a second",
                                    r"no whole reply within 15 s", 17))
    check(peak < 100, "status --http's peak RSS < 100 MB (%.1f MB)" % peak)


def main():
    shutil.rmtree(os.path.join(OUT, CASE), ignore_errors=True)
    os.makedirs(OUT, exist_ok=True)
    {"headers": case_headers, "trickle": case_trickle, "sigterm": case_sigterm, "conncap": case_conncap,
     "client": case_client}[CASE]()
    print("http attack %s: %s" % (CASE, "ok" if not failures else "FAILED: %d" % len(failures)))
    sys.exit(1 if failures else 0)


main()
