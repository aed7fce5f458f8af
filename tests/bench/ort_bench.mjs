#!/usr/bin/env node
// ONNX Runtime latency of one ONNX model: the peer of the simulator engine
// in tests/bench/engine_vs_ort.sh (onnxruntime-node from tests/bench/node_modules,
// installed by ci/install-deps.sh --bench).
//
// Usage: node tests/bench/ort_bench.mjs MODEL [--runs N] [--warmup W]
//                                       [--threads T] [--seed S] [--per-op]
//
// The session uses the CPU execution provider, intraOpNumThreads = T
// (default 2), interOpNumThreads = 1, sequential execution and every graph
// optimization ('all', ORT's default). Inputs are seeded uniform random
// values in [-1, 1) of the model's input shapes (a symbolic dimension is 1)
// created once; outputs are discarded. Prints, in the format torq-sim run
// --bench prints (engine_vs_ort.sh reads both with one pattern):
//
//   ort: onnxruntime-node 1.30.0, inputs input float32 [1,3,224,224], load 41.20 ms, first run 9.10 ms
//   bench: N runs, min X ms, median Y ms
//
// load = session creation (parse + graph optimization); first run is the
// first of the W warm-up runs (default 3). --per-op then runs a second,
// profiled session (profiling slows the runs, so it is never the timed one)
// for W + N runs and prints, from ORT's profiler (enableProfiling), the
// median over the last N runs of each op type's summed kernel time:
//
//   per-op: N profiled runs, median of the per-run sum by model op type
//     Conv                     56 nodes       6.008 ms  (ORT Conv x49, FusedConv x7)
//
// Op types are the model's, not ORT's: each kernel ORT ran after its graph
// optimizations is traced back to the model node it came from (modelOpOf),
// and the ORT kernels behind each row are listed, so the rows line up with
// the engine's torq-sim --per-op rows.
// Exit status 0, or 1 with a message on stderr (a model ORT refuses, bad
// arguments, onnxruntime-node not installed).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';

function usage(msg) {
  if (msg) console.error(`ort_bench: ${msg}`);
  console.error('usage: ort_bench.mjs MODEL [--runs N] [--warmup W] [--threads T] [--seed S] [--per-op]');
  process.exit(1);
}

function parseArgs(argv) {
  const opt = { runs: 20, warmup: 3, threads: 2, seed: 0, perOp: false, model: null };
  const ints = { '--runs': 'runs', '--warmup': 'warmup', '--threads': 'threads', '--seed': 'seed' };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a in ints) {
      const v = Number(argv[++i]);
      if (!Number.isInteger(v) || v < 0 || (a === '--runs' && v < 1)) usage(`${a} needs a non-negative integer${a === '--runs' ? ' >= 1' : ''}`);
      opt[ints[a]] = v;
    } else if (a === '--per-op') {
      opt.perOp = true;
    } else if (a === '-h' || a === '--help') {
      usage();
    } else if (a.startsWith('-') || opt.model) {
      usage(`unexpected argument '${a}'`);
    } else {
      opt.model = a;
    }
  }
  if (!opt.model) usage('no model given');
  return opt;
}

function loadOrt() {
  const here = path.dirname(new URL(import.meta.url).pathname);
  const require = createRequire(path.join(here, 'package.json'));
  try {
    return require('onnxruntime-node');
  } catch (e) {
    console.error(`ort_bench: onnxruntime-node not installed in ${here}/node_modules ` +
                  `(run ci/install-deps.sh --bench): ${e.message.split('\n')[0]}`);
    process.exit(1);
  }
}

// mulberry32: a small seeded generator, uniform in [0, 1).
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function makeFeeds(ort, session, seed) {
  const next = rng(seed);
  const feeds = {};
  const described = [];
  for (const meta of session.inputMetadata) {
    if (!meta.isTensor) throw new Error(`input '${meta.name}' is not a tensor`);
    const dims = meta.shape.map((d) => (typeof d === 'number' && d >= 0 ? d : 1));
    const n = dims.reduce((a, b) => a * b, 1);
    let data;
    switch (meta.type) {
      case 'float32': data = Float32Array.from({ length: n }, () => 2 * next() - 1); break;
      case 'float64': data = Float64Array.from({ length: n }, () => 2 * next() - 1); break;
      case 'int64': data = BigInt64Array.from({ length: n }, () => BigInt(Math.floor(next() * 10))); break;
      case 'int32': data = Int32Array.from({ length: n }, () => Math.floor(next() * 10)); break;
      case 'int8': data = Int8Array.from({ length: n }, () => Math.floor(next() * 256) - 128); break;
      case 'uint8': data = Uint8Array.from({ length: n }, () => Math.floor(next() * 256)); break;
      case 'bool': data = Uint8Array.from({ length: n }, () => (next() < 0.5 ? 1 : 0)); break;
      default: throw new Error(`input '${meta.name}' has type ${meta.type}, which ort_bench cannot generate`);
    }
    feeds[meta.name] = new ort.Tensor(meta.type, data, dims);
    described.push(`${meta.name} ${meta.type} [${dims.join(',')}]`);
  }
  return { feeds, described };
}

const nowMs = () => Number(process.hrtime.bigint()) / 1e6;
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

function sessionOptions(threads, extra = {}) {
  return {
    executionProviders: ['cpu'],
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    ...extra,
  };
}

// The nodes of an ONNX model's main graph, {name, opType, outputs}, read
// straight from the protobuf wire format (ModelProto.graph = 7,
// GraphProto.node = 1, NodeProto.output = 2, name = 3, op_type = 4), so that
// the bench needs no protobuf library.
function readNodes(file) {
  const buf = fs.readFileSync(file);
  const utf8 = (b, e) => buf.toString('utf8', b, e);
  function varint(pos) {
    let v = 0, mul = 1, b;
    do {
      if (pos.at >= buf.length) throw new Error(`${file}: truncated protobuf`);
      b = buf[pos.at++];
      v += (b & 0x7f) * mul;
      mul *= 128;
    } while (b & 0x80);
    return v;
  }
  // Calls fn(field, begin, end) for each length-delimited field of the message in [begin, end).
  function fields(begin, end, fn) {
    const pos = { at: begin };
    while (pos.at < end) {
      const key = varint(pos);
      const wire = key % 8, field = Math.floor(key / 8);
      if (wire === 0) varint(pos);
      else if (wire === 1) pos.at += 8;
      else if (wire === 5) pos.at += 4;
      else if (wire === 2) { const n = varint(pos); fn(field, pos.at, pos.at + n); pos.at += n; }
      else throw new Error(`${file}: unsupported protobuf wire type ${wire}`);
    }
  }
  const nodes = [];
  fields(0, buf.length, (f, b, e) => {
    if (f !== 7) return;
    fields(b, e, (gf, gb, ge) => {
      if (gf !== 1) return;
      const node = { name: '', opType: '', outputs: [] };
      fields(gb, ge, (nf, nb, ne) => {
        if (nf === 2) node.outputs.push(utf8(nb, ne));
        else if (nf === 3) node.name = utf8(nb, ne);
        else if (nf === 4) node.opType = utf8(nb, ne);
      });
      nodes.push(node);
    });
  });
  return nodes;
}

// Returns a function that names the model op type an ORT profiled node came
// from. ORT keeps a node's name when it only changes its kernel (Conv ->
// FusedConv), derives a fused node's name from the first node it absorbed
// ('<name>/MatMulAddFusion'), and names an NCHWc Conv after the output it
// replaces ('<output>_nchwc'); otherwise a kernel whose type, less a 'Fused'
// prefix, is a model op type counts as that one (FusedConv -> Conv). A node
// ORT created (ReorderInput, Gelu fused from Erf...) keeps its ORT op type.
// Fused nodes count under the first op they absorbed: the Relu after a Conv
// costs ORT nothing of its own.
function modelOpOf(modelNodes) {
  const byName = new Map(), byOutput = new Map(), opTypes = new Set(modelNodes.map((n) => n.opType));
  for (const n of modelNodes) {
    if (n.name) byName.set(n.name, n.opType);
    for (const o of n.outputs) byOutput.set(o, n.opType);
  }
  return (ortName, ortOp) => {
    if (byName.has(ortName)) return byName.get(ortName);
    for (let i = ortName.lastIndexOf('/'); i > 0; i = ortName.lastIndexOf('/', i - 1)) {
      const prefix = ortName.slice(0, i);
      if (byName.has(prefix) && /fusion|fused/i.test(ortName.slice(i))) return byName.get(prefix);
    }
    // An NCHWc node is named after the output of the last node it absorbed
    // (a Conv's Relu): its kernel type names the first one better.
    const kernel = ortOp.replace(/^Fused/, '');
    if (opTypes.has(kernel)) return kernel;
    const m = /^(.*)_nchwc$/.exec(ortName);
    if (m && byOutput.has(m[1])) return byOutput.get(m[1]);
    return ortOp;
  };
}

// Summarises an ORT profile (Chrome trace JSON) by the model's op types
// (opOf): per op type, the median over the last `runs` model runs of the
// summed kernel time, the node count and ORT's kernels behind it.
function summariseProfile(events, runs, opOf) {
  const modelRuns = events.filter((e) => e.cat === 'Session' && e.name === 'model_run')
    .sort((a, b) => a.ts - b.ts).slice(-runs);
  const perRun = modelRuns.map(() => new Map());
  const nodes = new Map(); // op -> Map(ORT node name -> ORT op type)
  for (const k of events) {
    if (k.cat !== 'Node' || !k.name.endsWith('_kernel_time')) continue;
    const i = modelRuns.findIndex((r) => k.ts >= r.ts && k.ts <= r.ts + r.dur);
    if (i < 0) continue;
    const ortName = k.name.slice(0, -'_kernel_time'.length), ortOp = k.args?.op_name ?? '?';
    const op = opOf(ortName, ortOp);
    perRun[i].set(op, (perRun[i].get(op) ?? 0) + k.dur / 1000);
    if (!nodes.has(op)) nodes.set(op, new Map());
    nodes.get(op).set(ortName, ortOp);
  }
  const rows = [...nodes.keys()].map((op) => {
    const kernels = new Map();
    for (const t of nodes.get(op).values()) kernels.set(t, (kernels.get(t) ?? 0) + 1);
    return {
      op, nodes: nodes.get(op).size, ms: median(perRun.map((m) => m.get(op) ?? 0)),
      as: [...kernels].map(([t, n]) => `${t} x${n}`).join(', '),
    };
  });
  return { runs: modelRuns.length, rows: rows.sort((a, b) => b.ms - a.ms) };
}

async function main() {
  const opt = parseArgs(process.argv.slice(2));
  const ort = loadOrt();
  let t0 = nowMs();
  const session = await ort.InferenceSession.create(opt.model, sessionOptions(opt.threads));
  const loadMs = nowMs() - t0;
  const { feeds, described } = makeFeeds(ort, session, opt.seed);
  let firstMs = NaN;
  for (let i = 0; i < opt.warmup; i++) {
    t0 = nowMs();
    await session.run(feeds);
    if (i === 0) firstMs = nowMs() - t0;
  }
  const times = [];
  for (let i = 0; i < opt.runs; i++) {
    t0 = nowMs();
    await session.run(feeds);
    times.push(nowMs() - t0);
  }
  await session.release();
  console.log(`ort: onnxruntime-node ${ort.env.versions?.node ?? '?'}, inputs ${described.join('; ')}, ` +
              `load ${loadMs.toFixed(2)} ms, first run ${firstMs.toFixed(2)} ms`);
  console.log(`bench: ${opt.runs} runs, min ${Math.min(...times).toFixed(3)} ms, median ${median(times).toFixed(3)} ms`);
  if (!opt.perOp) return;

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ort-profile-'));
  try {
    const prof = await ort.InferenceSession.create(opt.model, sessionOptions(opt.threads, {
      enableProfiling: true, profileFilePrefix: path.join(dir, 'ort'),
    }));
    for (let i = 0; i < opt.warmup + opt.runs; i++) await prof.run(feeds);
    prof.endProfiling();
    await prof.release();
    const files = fs.readdirSync(dir).filter((f) => f.endsWith('.json'));
    if (files.length !== 1) throw new Error(`expected one profile in ${dir}, found ${files.length}`);
    const events = JSON.parse(fs.readFileSync(path.join(dir, files[0]), 'utf8'));
    const { runs, rows } = summariseProfile(events, opt.runs, modelOpOf(readNodes(opt.model)));
    console.log(`per-op: ${runs} profiled runs, median of the per-run sum by model op type`);
    for (const r of rows) {
      console.log(`  ${r.op.padEnd(22)} ${String(r.nodes).padStart(4)} nodes ${r.ms.toFixed(3).padStart(11)} ms  (ORT ${r.as})`);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(`ort_bench: ${e.message ?? e}`);
  process.exit(1);
});
