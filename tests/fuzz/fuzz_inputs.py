#!/usr/bin/python3
"""Seeded fuzzing of what users hand torq-farm (issue 30): mutated ONNX
models (torq-gen-config discover), report JSONs (view, edit --list,
compare) and matrix specs with their test configs (torq-coordinator
validate), each run with a time limit; and a hostile fleet peer
(torq_hostile_peer, seeded) over a real socket beside a real worker
during a coordinator's run, whose export must equal a clean run's.
Every outcome is classified:

  handled  exit 0 or 1, or exit 2 with a message naming the input file
  unclear  exit 2 whose message does not name the file, or another code
  crash    killed by a signal (SIGSEGV, SIGFPE, SIGABRT, ...)
  hang     still running at the time limit
  lost     (peer) the run did not complete, or an op's result is missing
  poisoned (peer) an op's stored result differs from the clean run's

and the table printed at the end; exit 1 when anything is not handled.
Rerun with the same --seed for the same inputs; failing inputs stay in
OUT/failures/ with the command and its output.

Usage: tests/fuzz/fuzz_inputs.py [--bin build/bin] [--seed 1] [--count 60]
       [--timeout 30] [--out fuzz-out] [--kinds onnx,json,yaml,peer]
Needs /usr/bin/python3 with python3-onnx and python3-numpy (ci/install-deps.sh).
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
import time

import numpy as np
import onnx
from onnx import numpy_helper


def run(cmd, timeout):
    """(kind, code, output) of one command under a time limit."""
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout,
                           start_new_session=True)
    except subprocess.TimeoutExpired as e:
        return "hang", None, (e.output or b"").decode("utf-8", "replace")
    out = p.stdout.decode("utf-8", "replace")
    if p.returncode < 0 or p.returncode >= 128:
        return "crash", p.returncode, out
    return "done", p.returncode, out


def classify(kind, code, out, path):
    if kind != "done":
        return kind
    if code in (0, 1):
        return "handled"
    if code == 2 and path in out:
        return "handled"
    return "unclear"


# ---- ONNX mutations (each returns a description) ----

def mutate_attribute(m, rng):
    nodes = [n for n in m.graph.node if n.attribute]
    if not nodes:
        return "no attributes"
    n = rng.choice(nodes)
    a = rng.choice(list(n.attribute))
    value = rng.choice([0, -1, 1 << 40, -(1 << 62), 3])
    if a.type == onnx.AttributeProto.INTS and len(a.ints):
        a.ints[rng.randrange(len(a.ints))] = value
    elif a.type == onnx.AttributeProto.INT:
        a.i = value
    elif a.type == onnx.AttributeProto.FLOAT:
        a.f = rng.choice([float("nan"), float("inf"), -1e30, 0.0])
    else:
        return "attribute %s of %s untouched" % (a.name, n.op_type)
    return "%s.%s = %s" % (n.op_type, a.name, value)


def mutate_initializer(m, rng):
    inits = list(m.graph.initializer)
    if not inits:
        return "no initializers"
    t = rng.choice(inits)
    what = rng.randrange(4)
    if what == 0 and len(t.dims):
        t.dims[rng.randrange(len(t.dims))] = rng.choice([-3, 0, 1 << 40, 1 << 62])
        return "initializer %s dims %s" % (t.name, list(t.dims))
    if what == 1:
        a = numpy_helper.to_array(t)
        raw = a.tobytes()
        t.ClearField("float_data")
        t.ClearField("int64_data")
        t.ClearField("int32_data")
        t.raw_data = raw[: len(raw) // 2]
        return "initializer %s half its bytes" % t.name
    if what == 2:
        t.ClearField("raw_data")
        t.ClearField("float_data")
        t.data_location = onnx.TensorProto.EXTERNAL
        e = t.external_data.add()
        e.key, e.value = "location", rng.choice(["/dev/zero", "../../etc/passwd", "missing.bin"])
        return "initializer %s external data %s" % (t.name, e.value)
    t.data_type = rng.choice([0, 8, 99, onnx.TensorProto.DOUBLE])
    return "initializer %s data_type %d" % (t.name, t.data_type)


def mutate_input(m, rng):
    inp = m.graph.input[0]
    dims = inp.type.tensor_type.shape.dim
    if not dims:
        return "input without shape"
    dims[rng.randrange(len(dims))].dim_value = rng.choice([0, 1 << 31, 1 << 62])
    return "input %s dims %s" % (inp.name, [d.dim_value for d in dims])


def mutate_graph(m, rng):
    n = rng.choice(list(m.graph.node))
    what = rng.randrange(3)
    if what == 0:
        n.op_type = rng.choice(["NoSuchOp", "Conv", "Loop", ""])
        return "node %s op_type %r" % (n.name, n.op_type)
    if what == 1 and len(n.input):
        n.input[rng.randrange(len(n.input))] = "missing_value"
        return "node %s reads a missing value" % n.name
    n.output[0] = m.graph.node[0].output[0]
    return "node %s writes %s again" % (n.name, n.output[0])


def onnx_case(base, rng, path):
    kind = rng.randrange(6)
    if kind == 5:  # bytes: truncated or flipped
        data = bytearray(open(base, "rb").read())
        if rng.random() < 0.5:
            data = data[: rng.randrange(1, len(data))]
            what = "truncated to %d bytes" % len(data)
        else:
            for _ in range(rng.randrange(1, 20)):
                data[rng.randrange(len(data))] = rng.randrange(256)
            what = "bytes flipped"
        open(path, "wb").write(bytes(data))
        return what
    m = onnx.load(base)
    what = [mutate_attribute, mutate_initializer, mutate_input, mutate_graph, mutate_attribute][kind](m, rng)
    open(path, "wb").write(m.SerializeToString())
    return what


# ---- report JSON mutations ----

def json_case(base_text, rng, path):
    j = json.loads(base_text)
    ops = j["ops"]
    kind = rng.randrange(7)
    if kind == 0:
        depth = rng.choice([65, 1000, 100000])
        text = json.dumps(j)[:-1] + ', "deep": ' + "[" * depth + "]" * depth + "}"
        open(path, "w").write(text)
        return "nested %d deep" % depth
    op = ops[rng.choice(list(ops))]
    if kind == 1:
        ex = next(iter(op.get("executors", {}).values()), None)
        if ex is not None:
            ex["pcc"] = rng.choice([1.2e29, -5, "high", None, [1]])
        what = "pcc"
    elif kind == 2:
        j["default_tolerance"] = {"fp_max_tol": rng.choice([-1, "x", 1e308]), "allowed_wrong": rng.choice([2, -0.1])}
        what = "tolerance"
    elif kind == 3:
        op.pop("_node_index", None)
        what = "_node_index removed"
    elif kind == 4:
        op["_node_index"] = rng.choice([-1, 1 << 40, "3", 2.5])
        what = "_node_index %r" % op["_node_index"]
    elif kind == 5:
        text = json.dumps(j).replace('"ops"', '"ops', 1) if rng.random() < 0.5 else json.dumps(j)[:-rng.randrange(2, 50)]
        open(path, "w").write(text)
        return "syntax"
    else:
        text = json.dumps(j).replace("1.0", "1e400", 1)
        open(path, "w").write(text)
        return "1e400"
    open(path, "w").write(json.dumps(j))
    return what


# ---- matrix spec mutations ----

def yaml_case(model, rng, d, path):
    config = os.path.join(d, "cfg.yaml")
    reason = rng.choice(['"ok"', '"bad \\xff"', '"' + "x" * 100000 + '"'])
    cfg = "test_config:\n  demo-fp32-sim-discover:\n    status: EXPECTED_PASSING\n    reason: %s\n" % reason
    if rng.random() < 0.3:
        cfg = cfg.replace("status", rng.choice(["stauts", "status: [", "required_pcc: high\n    status"]))
    with open(config, "wb") as f:
        f.write(cfg.encode("utf-8").replace(b"\\xff", b"\xff"))
    k = rng.choice(["demo", "(" * 100000 + "demo" + ")" * 100000, "not " * 5000 + "demo", "demo and" * 3000 + " demo",
                    "(demo", "demo or or"])
    variants = rng.choice(["[fp32]", "[fp32, bf16-rne]", "[fp64]", "[{dtype: bf16, rounding: up}]"])
    spec = "models: [%s]\nvariants: %s\nmodes: [discover]\ntest_config: [%s]\npresets:\n  p: {k: \"%s\"}\n" % (
        model, variants, config, k)
    if rng.random() < 0.2:
        spec = spec.replace("models", "modles")
    open(path, "w").write(spec)
    return "spec (k of %d chars, variants %s, reason %s)" % (len(k), variants, reason[:10])


# ---- a hostile fleet peer during a run ----

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# Fields of a result that differ between two good runs: wall-clock times,
# and how many leases the job took (a lease the hostile peer held and lost
# is one more).
VOLATILE = {"host_ms", "timing", "attempts"}


def op_results(export):
    """op id -> executor -> every stable field of its result (status, error,
    metrics, outputs, worker id, job id, toolchain), from a run's report."""
    rep = json.load(open(os.path.join(export, "torq_gen_config_demo.json")))
    out = {}
    for op_id, op in rep["ops"].items():
        out[op_id] = {e: json.dumps({k: v for k, v in r.items() if k not in VOLATILE}, sort_keys=True)
                      for e, r in op.get("executors", {}).items()}
        out[op_id]["recommended"] = json.dumps(op.get("recommended_executor"))
    return out


def fleet_run(a, base, d, seed, timeout):
    """A coordinator run of the demo with one real worker and, when seed is
    not None, the hostile peer. Returns (verdict, detail)."""
    port = free_port()
    ep = "tcp://127.0.0.1:%d" % port
    log = open(os.path.join(d, "run.log"), "w")
    coord = subprocess.Popen([os.path.join(a.bin, "torq-coordinator"), "--model", base, "--bind", ep,
                              "--export", os.path.join(d, "out"), "--db", os.path.join(d, "db"),
                              "--min-workers", "1" if seed is None else "2", "--heartbeat-ms", "200",
                              "--job-timeout-ms", "5000"],
                             stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    env = dict(os.environ, TORQ_WORKER_DELAY_MS="50")
    worker = subprocess.Popen([os.path.join(a.bin, "torq-worker"), "--connect", ep, "--capacity", "2",
                               "--heartbeat-ms", "200", "--cache", os.path.join(d, "cache"), "--no-health-check",
                               "--id", "honest"], stdout=log, stderr=subprocess.STDOUT, env=env,
                              start_new_session=True)
    peer, code, said = None, None, ""
    try:
        if seed is not None:
            peer = subprocess.Popen([os.path.join(a.bin, "torq_hostile_peer"), "--connect", ep, "--seed", str(seed),
                                     "--seconds", "3"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            code = coord.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            code = None
        if peer:
            try:
                said = peer.communicate(timeout=10)[0].decode("utf-8", "replace").strip()
            except subprocess.TimeoutExpired:
                said = "hostile peer still running"
    finally:  # nothing outlives the case, whatever happened
        for p in (coord, worker):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM if p is worker else signal.SIGKILL)
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait()
        if peer and peer.poll() is None:
            peer.kill()
            peer.wait()
        log.close()
    if code is None:
        return "hang", said
    if code < 0 or code >= 128:
        return "crash", said
    if code != 0:
        return "lost", "coordinator exit %d; %s" % (code, said)
    return "done", said


def peer_case(a, base, clean, rng, d):
    seed = rng.randrange(1 << 30)
    verdict, said = fleet_run(a, base, d, seed, a.timeout)
    if verdict != "done":
        return verdict, "seed %d: %s" % (seed, said)
    try:
        got = op_results(os.path.join(d, "out"))
    except (OSError, ValueError, KeyError) as e:
        return "lost", "seed %d: no report (%s)" % (seed, e)
    if set(got) != set(clean) or any(set(got[k]) != set(clean[k]) for k in clean):
        return "lost", "seed %d: ops or executors missing" % seed
    diff = [(k, e) for k in clean for e in clean[k] if got[k][e] != clean[k][e]]
    if diff:
        return "poisoned", "seed %d: %d results differ, first %s: %s vs clean %s" % (
            seed, len(diff), diff[0], got[diff[0][0]][diff[0][1]], clean[diff[0][0]][diff[0][1]])
    return "handled", "seed %d: %s" % (seed, said)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default="build/bin")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=60, help="inputs per kind")
    ap.add_argument("--timeout", type=float, default=30)
    ap.add_argument("--out", default="fuzz-out")
    ap.add_argument("--kinds", default="onnx,json,yaml,peer")
    a = ap.parse_args()
    gen = os.path.join(a.bin, "torq-gen-config")
    coord = os.path.join(a.bin, "torq-coordinator")
    shutil.rmtree(a.out, ignore_errors=True)
    os.makedirs(os.path.join(a.out, "failures"))
    base = os.path.join(a.out, "demo.onnx")
    subprocess.run([os.path.join(a.bin, "torq-sim"), "demo", "--save", base], check=True, stdout=subprocess.DEVNULL)
    good = os.path.join(a.out, "good")
    subprocess.run([gen, "discover", "-q", "--model", base, "--output-dir", good], check=True)
    report_text = open(os.path.join(good, "torq_gen_config_demo.json")).read()
    rng = random.Random(a.seed)
    table = {}
    clean = None
    for kind in a.kinds.split(","):
        row = table.setdefault(kind, {"tried": 0, "handled": 0, "refused": 0, "unclear": 0, "crash": 0, "hang": 0,
                                      "lost": 0, "poisoned": 0})
        if kind == "peer" and clean is None:
            d = os.path.join(a.out, "peer-clean")
            os.makedirs(d)
            verdict, said = fleet_run(a, base, d, None, a.timeout)
            if verdict != "done":
                print("the clean fleet run failed (%s): see %s/run.log" % (verdict, d))
                return 1
            clean = op_results(os.path.join(d, "out"))
        for i in range(a.count):
            d = os.path.join(a.out, "%s-%03d" % (kind, i))
            os.makedirs(d)
            if kind == "peer":
                row["tried"] += 1
                verdict, what = peer_case(a, base, clean, rng, d)
                row[verdict] += 1
                if verdict != "handled":
                    with open(os.path.join(a.out, "failures", "peer-%03d.txt" % i), "a") as f:
                        f.write("%s (%s); the run's log: %s/run.log\n" % (what, verdict, d))
                else:
                    shutil.rmtree(d, ignore_errors=True)
                print("peer %d: %s (%s)" % (i, verdict, what), flush=True)
                continue
            if kind == "onnx":
                path = os.path.join(d, "m.onnx")
                what = onnx_case(base, rng, path)
                cmds = [[gen, "discover", "-q", "--model", path, "--output-dir", os.path.join(d, "out")]]
            elif kind == "json":
                path = os.path.join(d, "torq_gen_config_demo.json")
                what = json_case(report_text, rng, path)
                cmds = [[gen, "view", path], [gen, "edit", path, "--list"], [gen, "compare", path, path]]
            else:
                path = os.path.join(d, "spec.yaml")
                what = yaml_case(base, rng, d, path)
                cmds = [[coord, "validate", path], [coord, "--spec", path, "--collect-only", "--preset", "p"]]
            for cmd in cmds:
                row["tried"] += 1
                k, code, out = run(cmd, a.timeout)
                verdict = classify(k, code, out, path if kind != "yaml" else d)
                row[verdict] += 1
                if verdict == "handled" and code == 2:
                    row["refused"] += 1  # a clear error naming the file
                if verdict != "handled":
                    with open(os.path.join(a.out, "failures", "%s-%03d.txt" % (kind, i)), "a") as f:
                        f.write("%s\n%s\nexit %s (%s)\n%s\n\n" % (what, " ".join(cmd), code, verdict, out[-4000:]))
        shutil.rmtree(os.path.join(a.out, "good"), ignore_errors=True)
    print("| inputs | runs | handled (of which refused, exit 2) | unclear errors | crashes | hangs "
          "| results lost | results poisoned |")
    print("|---|---|---|---|---|---|---|---|")
    bad = 0
    for kind, r in table.items():
        print("| %s x%d (seed %d) | %d | %d (%d) | %d | %d | %d | %d | %d |" % (
            kind, a.count, a.seed, r["tried"], r["handled"], r["refused"], r["unclear"], r["crash"], r["hang"],
            r["lost"], r["poisoned"]))
        bad += r["unclear"] + r["crash"] + r["hang"] + r["lost"] + r["poisoned"]
    print("failures: %s" % (os.path.join(a.out, "failures") if bad else "none"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
