#!/usr/bin/python3
"""Exports torchvision CNNs with seeded random weights to ONNX test cases.

Usage: export_torchvision.py OUT_DIR [--zoo] [--only NAME...] [--list]

Each case is written in the ONNX backend-test layout:

    OUT_DIR/<case>/model.onnx
    OUT_DIR/<case>/test_data_set_0/input_0.pb    seeded random input (TensorProto)
    OUT_DIR/<case>/test_data_set_0/output_0.pb   PyTorch fp32 output for it

where <case> is <arch>_opset<N>. The weights are random but trained-like:
Conv/Linear biases are non-zero, BatchNorm affine parameters are random and
its running statistics are calibrated on a random batch and then perturbed,
so that BN folding or BN kernel bugs change the output. NAME given to --only
selects cases by case name or by architecture name; the default set is the
cases not marked opt-in. Needs Debian's python3-torch, python3-torchvision
and python3-onnx (this is why the shebang names /usr/bin/python3).

--zoo exports the model zoo instead (ZOO below; ci/make-zoo.sh calls it):
the architectures users run, at their usual input sizes and at opsets
11..17, each case named by its model (OUT_DIR/resnet50/model.onnx), so a
matrix spec's test IDs are <model>-<variant>-.... Zoo cases are built once:
each has a stamp (OUT_DIR/<name>/zoo-stamp.json) keyed by this file's
content and the torch, torchvision and onnx versions, and a case whose
stamp matches is not exported again (this check imports no torch, so a
fully built zoo is checked in a fraction of a second). A case is exported
into OUT_DIR/.partial-<name> and renamed into place, so a killed export
leaves no half model. Each case's size on disk and export time are printed,
then the totals.
"""
import argparse
import hashlib
import importlib.metadata
import json
import os
import shutil
import sys
import time
import warnings

# torch, torchvision and onnx are imported on first use (_load_torch, which
# defines the module globals torch, torchvision, onnx, convnext and M): a
# cached zoo is checked without paying for the import (about 2 s).


class Progress:
    """Says what the export is doing at least every few seconds (issue 31):
    "[progress] <tool>: <step> (<elapsed> s)" on stderr (a terminal or the
    log it is redirected to), repeated by a thread while one export runs
    long. The interval is 5 s, or $TORQ_PROGRESS_MS."""

    def __init__(self, tool):
        import threading
        self.tool, self.step, self.t0 = tool, "", time.time()
        try:
            self.every = max(int(os.environ.get("TORQ_PROGRESS_MS", "5000")), 1) / 1000.0
        except ValueError:
            self.every = 5.0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def note(self, step):
        self.step = step

    def _loop(self):
        while not self.stop.wait(self.every):
            if self.step:
                print(f"[progress] {self.tool}: {self.step} ({time.time() - self.t0:.0f} s)",
                      file=sys.stderr, flush=True)

    def close(self):
        self.stop.set()
        self.thread.join()

def _load_torch():
    global torch, torchvision, onnx, convnext, M
    if "torch" in globals():
        return
    import onnx as _onnx
    import onnx.numpy_helper  # noqa: F401  (onnx.numpy_helper below)
    import torch as _torch
    import torchvision as _torchvision
    from torchvision.models import convnext as _convnext
    torch, torchvision, onnx, convnext = _torch, _torchvision, _onnx, _convnext
    M = torchvision.models
    # torch 1.13 compares every pair of initializers to merge duplicates,
    # which takes longer than the rest of the export for large models.
    # torchvision CNNs share no weights, so there is nothing to merge: skip
    # the pass.
    torch._C._jit_pass_onnx_deduplicate_initializers = lambda graph, params, training: params


def __getattr__(name):
    # Module attributes for importers (tests/calibration reads ex.torchvision).
    if name in ("torch", "torchvision", "onnx", "convnext", "M"):
        _load_torch()
        return globals()[name]
    raise AttributeError(name)

# One export: (case arch, builder, opset, input shape, options).
# Options: keep_bn (export BatchNormalization nodes instead of folding them
# into Conv), opt_in (left out of the default set, which is held to about
# 300 MB of files and 3 minutes of export and run on 2 cores).
# Opsets span 7..17; every opset is used at least once. Input sizes are
# reduced and partly non-square / odd to keep the run short and to exercise
# padding and ceil_mode edge cases.


def _convnext_reduced():
    # ConvNeXt with torchvision's own blocks (LayerNorm2d, depthwise 7x7,
    # Linear on channels-last, GELU, layer scale) at a fraction of the size
    # of convnext_tiny (28 M parameters).
    cfg = convnext.CNBlockConfig
    return convnext.ConvNeXt([cfg(32, 64, 2), cfg(64, 128, 2), cfg(128, 256, 3), cfg(256, None, 2)],
                             stochastic_depth_prob=0.1)


CASES = [
    # Before opset 10 MaxPool has no ceil_mode; the exporter turns it into pads.
    ("squeezenet1_1", lambda: M.squeezenet1_1(), 7, (1, 3, 224, 224), {}),
    ("mnasnet0_5", lambda: M.mnasnet0_5(), 8, (1, 3, 160, 192), {"keep_bn": True}),
    ("shufflenet_v2_x0_5", lambda: M.shufflenet_v2_x0_5(), 9, (2, 3, 160, 160), {"keep_bn": True}),
    ("inception_v3", lambda: M.inception_v3(aux_logits=False, transform_input=True, init_weights=True),
     10, (1, 3, 139, 139), {}),
    ("googlenet", lambda: M.googlenet(aux_logits=False, transform_input=True, init_weights=True),
     11, (1, 3, 193, 193), {}),
    ("densenet121", lambda: M.densenet121(), 12, (1, 3, 128, 128), {}),
    # Opset 13: Split/Squeeze/Unsqueeze take their axes as inputs.
    ("shufflenet_v2_x0_5", lambda: M.shufflenet_v2_x0_5(), 13, (1, 3, 224, 224), {}),
    # Hardswish is HardSigmoid * x before opset 14 and HardSwish from 14 on.
    ("mobilenet_v3_small", lambda: M.mobilenet_v3_small(), 13, (1, 3, 224, 224), {}),
    ("mobilenet_v3_small", lambda: M.mobilenet_v3_small(), 14, (2, 3, 160, 200), {"keep_bn": True}),
    # LayerNorm is decomposed into ReduceMean/Sub/Pow/Sqrt/Div before opset 17.
    # ConvNeXt does not export below opset 9: torch 1.13 writes GELU as Erf,
    # which ONNX only has from opset 9 on (the checker rejects the model).
    ("convnext_reduced", _convnext_reduced, 13, (1, 3, 160, 160), {}),
    ("efficientnet_b0", lambda: M.efficientnet_b0(), 15, (1, 3, 200, 200), {}),
    ("regnet_y_400mf", lambda: M.regnet_y_400mf(), 15, (1, 3, 176, 176), {"keep_bn": True}),
    ("resnet18", lambda: M.resnet18(), 16, (1, 3, 224, 224), {"keep_bn": True}),
    ("convnext_reduced", _convnext_reduced, 17, (1, 3, 176, 144), {}),
    # Clip with min/max as inputs (opset 11+); width 0.5 keeps it small.
    ("mobilenet_v2", lambda: M.mobilenet_v2(width_mult=0.5), 12, (1, 3, 224, 224), {}),
    # Opt-in: large weights (disk) and long runs, or little extra coverage.
    ("convnext_tiny", lambda: M.convnext_tiny(), 17, (1, 3, 224, 224), {"opt_in": True}),
    ("mnasnet0_5", lambda: M.mnasnet0_5(), 10, (1, 3, 224, 224), {"opt_in": True}),
    ("regnet_x_400mf", lambda: M.regnet_x_400mf(), 14, (1, 3, 192, 192), {"opt_in": True}),
    ("alexnet", lambda: M.alexnet(), 8, (1, 3, 224, 224), {"opt_in": True}),
    ("vgg11_bn", lambda: M.vgg11_bn(), 11, (1, 3, 224, 224), {"opt_in": True, "keep_bn": True}),
    ("inception_v3", lambda: M.inception_v3(aux_logits=False, init_weights=True),
     11, (1, 3, 299, 299), {"opt_in": True}),
]



def _segmentation(build):
    """A torchvision segmentation model as a plain module: its forward
    returns a dict; the zoo exports the "out" logits (N x classes x H x W)."""
    class Logits(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = build()

        def forward(self, x):
            return self.model(x)["out"]
    return Logits()


class _Detections:
    """Builds a torchvision detection model as a plain module (the class is
    made on first use, after torch is imported): its forward returns image
    0's detections as one N x 6 tensor, rows (x1, y1, x2, y2, score, label)
    in the model's order (by score), so the one output a zoo check compares
    covers the boxes, the scores and the labels. N depends on the data.

    With random weights the detections kept hang on float comparisons (the
    score threshold, NMS's IoU threshold and score order, the
    detections_per_img cut) that an fp32 engine may decide the other way
    than PyTorch when a margin is as small as their rounding differences.
    check_stable() measures every margin on the reference run and refuses an
    export where one is below MARGIN: the zoo entry's score_thresh and
    detections_per_img were chosen so that none is, and the export proves it
    each time it is made."""
    MARGIN = 1e-4

    def __new__(cls, build):
        class Detections(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.model = build()

            def forward(self, x):
                d = self.model(x)[0]
                return torch.cat([d["boxes"], d["scores"][:, None],
                                  d["labels"][:, None].to(d["boxes"].dtype)], 1)

            def calibration_forward(self, x):
                # Train mode makes a detection model want targets: run the
                # backbone alone, which holds every BatchNorm.
                return self.model.backbone(x)

            def check_stable(self, x):
                return _detection_margins(self.model, x, cls.MARGIN)
        return Detections()


def _detection_margins(model, x, floor):
    """The margins of the float decisions behind model(x)'s detections
    (SSD-style postprocessing: per-class score threshold, batched NMS, the
    detections_per_img cut); raises when one is below `floor`. Returns them
    as text."""
    from torchvision.ops import boxes as box_ops
    seen = {}
    nms = box_ops.batched_nms

    def spy(boxes, scores, idxs, iou_threshold):
        keep = nms(boxes, scores, idxs, iou_threshold)
        seen.update(boxes=boxes, scores=scores, labels=idxs, iou=iou_threshold, keep=keep)
        return keep
    box_ops.batched_nms = spy
    try:
        with torch.no_grad():
            model(x)
            images, _ = model.transform([x[0]])
            head = model.head(list(model.backbone(images.tensors).values()))
    finally:
        box_ops.batched_nms = nms
    raw = torch.softmax(head["cls_logits"][0], -1)[:, 1:]  # class 0 is the background
    scores, labels, keep = seen["scores"], seen["labels"], seen["keep"]
    kept = keep[:model.detections_per_img]
    m = {"score_thresh": float((raw - model.score_thresh).abs().min())}
    ks = scores[kept]
    m["kept_order"] = float((ks[:-1] - ks[1:]).min()) if len(ks) > 1 else 1.0
    m["cut"] = float(scores[keep[len(kept) - 1]] - scores[keep[len(kept)]]) if len(keep) > len(kept) else 1.0
    iou = box_ops.box_iou(seen["boxes"], seen["boxes"])
    pair = (labels[:, None] == labels[None, :]) & ~torch.eye(len(scores), dtype=torch.bool)
    m["nms_iou"] = float((iou - seen["iou"]).abs()[pair].min()) if pair.any() else 1.0
    over = pair & (iou > seen["iou"])
    m["nms_order"] = float((scores[:, None] - scores[None, :]).abs()[over].min()) if over.any() else 1.0
    text = (f"{len(scores)} candidates, {int(over.sum()) // 2} same-class pairs overlapping past NMS's "
            f"IoU {seen['iou']}, {len(kept)} kept; margins " +
            ", ".join(f"{k} {v:.2g}" for k, v in m.items()))
    low = [k for k, v in m.items() if v < floor]
    if low:
        raise RuntimeError(f"unstable detection reference ({', '.join(low)} below {floor}): {text}")
    return text


# The model zoo (--zoo, ci/make-zoo.sh): (name, builder, opset, input shape,
# options as in CASES). Architectures users run, at their usual input sizes
# (224; 240 for efficientnet_b1, whose pretrained weights are evaluated at
# 240; 299 for inception_v3), exported as users export them (BatchNorm
# folded into Conv by TrainingMode.EVAL, constant folding), the opsets
# spread over 11..17, the ones users meet:
#   11  Resize with coordinate modes, Clip with min/max inputs
#   13  Split/Squeeze/Unsqueeze axes as inputs, Softmax on one axis
#   14  HardSwish (HardSigmoid * x before)
#   17  LayerNormalization (ReduceMean/Sub/Pow/Sqrt/Div before)
# (12, 15 and 16 change nothing these models use: they are there because
# users export at them.) Segmentation: lraspp_mobilenet_v3_large at opset 11
# (dilated MobileNetV3 backbone, HardSigmoid, bilinear Resize, the LR-ASPP
# head; its dict output is exported as the "out" logits). Detection:
# ssdlite320_mobilenet_v3_large at opset 11 (3193 nodes with its
# post-processing in the graph: NonZero, TopK, GatherND, data-dependent
# shapes, and batched_nms's If with NonMaxSuppression in a branch), its
# output image 0's detections as N x 6 rows (box, score, label; _Detections).
# Its BatchNorm statistics are calibrated on the backbone alone (train mode
# makes a detection model want targets). With random weights the boxes kept
# hang on float decisions an fp32 engine could take the other way than
# PyTorch: score_thresh 0.14 and detections_per_img 10 (132 candidates, 10
# same-class pairs overlapping past NMS's IoU 0.55, 10 kept) leave every
# margin >= 1.2e-3 but the score threshold's (4.1e-4), and each export
# measures them and fails below 1e-4 (_detection_margins). The other
# torchvision detection models export (opsets 11 and 17) and run in the
# engine but are not in the zoo (large, and their outputs unchecked against
# PyTorch): retinanet_resnet50_fpn, fcos_resnet50_fpn (InstanceNormalization,
# Mod, Xor), fasterrcnn_mobilenet_v3_large_320_fpn (RoiAlign,
# ScatterElements), maskrcnn_resnet50_fpn and keypointrcnn_resnet50_fpn
# (also ConvTranspose, a Loop pasting masks / decoding keypoints).
ZOO = [
    ("resnet18", lambda: M.resnet18(), 11, (1, 3, 224, 224), {}),
    ("densenet121", lambda: M.densenet121(), 11, (1, 3, 224, 224), {}),
    ("lraspp_mobilenet_v3_large",
     lambda: _segmentation(lambda: M.segmentation.lraspp_mobilenet_v3_large(
         weights=None, weights_backbone=None)), 11, (1, 3, 224, 224), {}),
    ("ssdlite320_mobilenet_v3_large",
     lambda: _Detections(lambda: M.detection.ssdlite320_mobilenet_v3_large(
         weights=None, weights_backbone=None, score_thresh=0.14, detections_per_img=10)),
     11, (1, 3, 320, 320), {}),
    ("mobilenet_v2", lambda: M.mobilenet_v2(), 12, (1, 3, 224, 224), {}),
    ("squeezenet1_1", lambda: M.squeezenet1_1(), 12, (1, 3, 224, 224), {}),
    ("efficientnet_b0", lambda: M.efficientnet_b0(), 13, (1, 3, 224, 224), {}),
    ("googlenet", lambda: M.googlenet(aux_logits=False, init_weights=True), 13, (1, 3, 224, 224), {}),
    ("mobilenet_v3_large", lambda: M.mobilenet_v3_large(), 14, (1, 3, 224, 224), {}),
    ("shufflenet_v2_x1_0", lambda: M.shufflenet_v2_x1_0(), 14, (1, 3, 224, 224), {}),
    ("efficientnet_b1", lambda: M.efficientnet_b1(), 15, (1, 3, 240, 240), {}),
    ("inception_v3", lambda: M.inception_v3(aux_logits=False, init_weights=True), 16,
     (1, 3, 299, 299), {}),
    ("regnet_y_400mf", lambda: M.regnet_y_400mf(), 16, (1, 3, 224, 224), {}),
    ("resnet50", lambda: M.resnet50(), 17, (1, 3, 224, 224), {}),
    ("convnext_tiny", lambda: M.convnext_tiny(), 17, (1, 3, 224, 224), {}),
    ("vit_b_16", lambda: M.vit_b_16(), 17, (1, 3, 224, 224), {}),
]

SEED = 20240607


def case_name(arch, opset):
    return f"{arch}_opset{opset}"


def randomise(model, gen):
    """Gives the model trained-like parameters (in place)."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.Linear) and not m.weight.any():
                # Zero-initialised classifiers (vit's head) would make the
                # output constant: give them a unit-gain random weight.
                m.weight.copy_(torch.randn(m.weight.shape, generator=gen) / m.in_features ** 0.5)
            if isinstance(m, torch.nn.MultiheadAttention) and m.in_proj_bias is not None:
                # Zero-initialised Q/K/V biases (the out_proj bias is a Linear's).
                scale = 0.1 * float(m.in_proj_weight.std()) * m.embed_dim ** 0.5
                m.in_proj_bias.copy_(scale * torch.randn(m.in_proj_bias.shape, generator=gen))
            elif isinstance(m, (torch.nn.Conv2d, torch.nn.Linear)) and m.bias is not None:
                # About a tenth of the output scale of the layer for unit
                # inputs, so that biases never drown the signal.
                fan_in = m.weight[0].numel()
                scale = 0.1 * float(m.weight.std()) * fan_in ** 0.5
                m.bias.copy_(scale * torch.randn(m.bias.shape, generator=gen))
            elif isinstance(m, (torch.nn.BatchNorm2d, torch.nn.LayerNorm)):
                if m.weight is not None:
                    m.weight.copy_(0.5 + torch.rand(m.weight.shape, generator=gen))
                    m.bias.copy_(0.1 * torch.randn(m.bias.shape, generator=gen))
            elif isinstance(m, convnext.CNBlock):
                # torchvision initialises layer scale to 1e-6, which would hide
                # every bug inside the block.
                m.layer_scale.copy_(0.2 + 0.3 * torch.rand(m.layer_scale.shape, generator=gen))


def calibrate_bn(model, shape, gen):
    """Sets BN running statistics from a random batch, then perturbs them."""
    bns = [m for m in model.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    if not bns:
        return
    for m in bns:
        m.reset_running_stats()
        m.momentum = None  # cumulative average over the calibration batch
    model.train()
    with torch.no_grad():
        getattr(model, "calibration_forward", model)(make_input((2,) + tuple(shape[1:]), gen))
        for m in bns:
            m.running_mean.add_(0.1 * torch.randn(m.running_mean.shape, generator=gen)
                                * m.running_var.sqrt())
            m.running_var.mul_(0.75 + 0.5 * torch.rand(m.running_var.shape, generator=gen))
    model.eval()


def make_input(shape, gen):
    """Random image-like input: smooth blobs plus noise.

    Pure white noise has the same statistics everywhere, so after global
    pooling every input gives nearly the same logits (SqueezeNet's barely
    change at all); large-scale structure keeps the output input-dependent.
    """
    n, c, h, w = shape
    coarse = torch.randn((n, c, max(2, h // 16), max(2, w // 16)), generator=gen)
    smooth = torch.nn.functional.interpolate(coarse, size=(h, w), mode="bilinear",
                                             align_corners=False)
    return 1.5 * smooth + 0.5 * torch.randn(shape, generator=gen)


def _op_types(graph):
    """The op types of a graph and of the subgraphs in it (an If's branches)."""
    ops = set()
    for n in graph.node:
        ops.add(n.op_type)
        for a in n.attribute:
            for g in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                ops |= _op_types(g)
    return ops


def export_case(out_dir, arch, build, opset, shape, opts, name=None, case_dir=None):
    """Exports one case into case_dir (default OUT_DIR/<name>); name defaults
    to <arch>_opset<N>. Returns (name, node count, sorted op types, those of
    subgraphs included)."""
    _load_torch()
    name = name or case_name(arch, opset)
    d = case_dir or os.path.join(out_dir, name)
    data = os.path.join(d, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    torch.manual_seed(SEED)
    gen = torch.Generator().manual_seed(SEED)
    model = build()
    randomise(model, gen)
    calibrate_bn(model, shape, gen)
    model.eval()
    x = make_input(shape, gen)
    with torch.no_grad():
        y = model(x)
    if hasattr(model, "check_stable"):
        print(f"{name}: stable reference: {model.check_stable(x)}", flush=True)
    path = os.path.join(d, "model.onnx")
    keep_bn = opts.get("keep_bn", False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # TrainingMode.PRESERVE on an eval-mode model exports inference
        # BatchNormalization nodes; EVAL would fold them into Conv.
        torch.onnx.export(model, x, path, opset_version=opset, input_names=["input"],
                          output_names=["output"],
                          training=torch.onnx.TrainingMode.PRESERVE if keep_bn
                          else torch.onnx.TrainingMode.EVAL,
                          do_constant_folding=not keep_bn)
    proto = onnx.load(path)
    onnx.checker.check_model(proto)
    ops = sorted(_op_types(proto.graph))
    if keep_bn and "BatchNormalization" not in ops:
        raise RuntimeError(f"{name}: BatchNormalization nodes were folded away")
    for fname, t in (("input_0.pb", x), ("output_0.pb", y)):
        with open(os.path.join(data, fname), "wb") as f:
            f.write(onnx.numpy_helper.from_array(t.numpy(), name).SerializeToString())
    return name, len(proto.graph.node), ops


ZOO_STAMP = "zoo-stamp.json"
ZOO_FILES = ("model.onnx", os.path.join("test_data_set_0", "input_0.pb"),
             os.path.join("test_data_set_0", "output_0.pb"))


def zoo_versions():
    """The versions a zoo export depends on, read without importing them
    ("missing" for a package that is not installed)."""
    def version(p):
        try:
            return importlib.metadata.version(p)
        except importlib.metadata.PackageNotFoundError:
            return "missing"
    return {p: version(p) for p in ("torch", "torchvision", "onnx")}


def zoo_key(name, versions):
    """A zoo case's cache key: this file's content (the case table, the
    randomisation, the export options), the library versions and the name."""
    h = hashlib.sha256()
    with open(os.path.abspath(__file__), "rb") as f:
        h.update(f.read())
    h.update(json.dumps(versions, sort_keys=True).encode())
    h.update(name.encode())
    return h.hexdigest()


def read_stamp(d):
    try:
        with open(os.path.join(d, ZOO_STAMP)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def dir_bytes(d):
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(d) for f in fs)


def mb(n):
    return f"{n / 1e6:.1f} MB"


def shape_text(shape):
    return "x".join(map(str, shape))


def zoo_main(args):
    names = [z[0] for z in ZOO]
    cases = ZOO
    if args.only:
        unknown = sorted(set(args.only) - set(names))
        if unknown:
            print(f"make-zoo: unknown model(s): {' '.join(unknown)}; the zoo: {' '.join(names)}",
                  file=sys.stderr)
            return 2
        cases = [z for z in ZOO if z[0] in args.only]
    versions = zoo_versions()
    out = args.out_dir
    if args.list:
        for name, _, opset, shape, _ in cases:
            d = os.path.join(out, name)
            st = read_stamp(d)
            if st is None:
                state = "not built"
            elif st.get("key") != zoo_key(name, versions):
                state = "stale"
            else:
                state = f"built, {mb(dir_bytes(d))}, exported in {st['export_s']:.1f} s"
            print(f"{name:28s} opset {opset}  {shape_text(shape):14s} {state}")
        return 0
    os.makedirs(out, exist_ok=True)
    if not args.only:
        # A case dropped from the zoo would stay in the specs' globs.
        for entry in sorted(os.listdir(out)):
            d = os.path.join(out, entry)
            if entry not in names and os.path.isdir(d) and read_stamp(d) is not None:
                shutil.rmtree(d)
                print(f"removed {entry}: no longer in the zoo", flush=True)
    exported = cached = 0
    now_s = total_s = 0.0
    total_bytes = 0
    progress = Progress("make-zoo")
    for i, (name, build, opset, shape, opts) in enumerate(cases):
        progress.note(f"{name} ({i + 1}/{len(cases)})")
        d = os.path.join(out, name)
        key = zoo_key(name, versions)
        st = read_stamp(d)
        if (st is not None and st.get("key") == key
                and all(os.path.isfile(os.path.join(d, f)) for f in ZOO_FILES)):
            size = dir_bytes(d)
            print(f"cached {name}: opset {opset}, {shape_text(shape)}, {mb(size)}, "
                  f"exported in {st['export_s']:.1f} s", flush=True)
            cached += 1
            total_s += st["export_s"]
            total_bytes += size
            continue
        progress.note(f"loading torch for {name} ({i + 1}/{len(cases)})")
        _load_torch()
        torch.set_num_threads(2)
        progress.note(f"exporting {name} ({i + 1}/{len(cases)})")
        partial = os.path.join(out, ".partial-" + name)
        shutil.rmtree(partial, ignore_errors=True)
        t0 = time.time()
        _, nodes, ops = export_case(out, name, build, opset, shape, opts, name=name, case_dir=partial)
        secs = time.time() - t0
        with open(os.path.join(partial, ZOO_STAMP), "w") as f:
            json.dump({"key": key, "name": name, "opset": opset, "input": list(shape),
                       "versions": versions, "export_s": round(secs, 2), "nodes": nodes,
                       "ops": ops}, f, indent=1)
            f.write("\n")
        # Swap the finished case in: a killed export leaves only .partial-*.
        old = os.path.join(out, ".old-" + name)
        shutil.rmtree(old, ignore_errors=True)
        if os.path.exists(d):
            os.replace(d, old)
        os.replace(partial, d)
        shutil.rmtree(old, ignore_errors=True)
        size = dir_bytes(d)
        print(f"exported {name}: opset {opset}, {shape_text(shape)}, {mb(size)}, {secs:.1f} s, "
              f"{nodes} nodes, ops {' '.join(ops)}", flush=True)
        exported += 1
        now_s += secs
        total_s += secs
        total_bytes += size
    progress.close()
    print(f"zoo: {len(cases)} models in {out}: {exported} exported now ({now_s:.1f} s), "
          f"{cached} cached; {mb(total_bytes)} on disk; export time of these models "
          f"{total_s:.1f} s (torch {versions['torch']}, torchvision {versions['torchvision']})")
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out_dir")
    p.add_argument("--only", nargs="+", metavar="NAME",
                   help="case (<arch>_opset<N>) or architecture names; may name opt-in cases")
    p.add_argument("--list", action="store_true", help="list the cases and exit")
    p.add_argument("--zoo", action="store_true",
                   help="the model zoo (ZOO), cached by stamp, instead of the test cases")
    args = p.parse_args()
    if args.zoo:
        return zoo_main(args)
    if args.list:
        for arch, _, opset, shape, opts in CASES:
            print(case_name(arch, opset), "x".join(map(str, shape)) +
                  (" (opt-in)" if opts.get("opt_in") else ""))
        return 0
    if args.only:
        wanted = set(args.only)
        cases = [c for c in CASES if c[0] in wanted or case_name(c[0], c[2]) in wanted]
        known = {c[0] for c in CASES} | {case_name(c[0], c[2]) for c in CASES}
        unknown = wanted - known
        if unknown:
            print(f"export_torchvision: unknown case(s): {' '.join(sorted(unknown))}", file=sys.stderr)
            return 2
    else:
        cases = [c for c in CASES if not c[4].get("opt_in")]
    _load_torch()
    torch.set_num_threads(2)
    os.makedirs(args.out_dir, exist_ok=True)
    progress = Progress("export_torchvision")
    for i, (arch, build, opset, shape, opts) in enumerate(cases):
        progress.note(f"exporting {case_name(arch, opset)} ({i + 1}/{len(cases)})")
        t0 = time.time()
        name, nodes, ops = export_case(args.out_dir, arch, build, opset, shape, opts)
        print(f"exported {name}: {nodes} nodes, {time.time() - t0:.1f} s, ops {' '.join(ops)}",
              flush=True)
    progress.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
