#!/usr/bin/python3
"""Exports torchvision CNNs with seeded random weights to ONNX test cases.

Usage: export_torchvision.py OUT_DIR [--only NAME...] [--list]

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
"""
import argparse
import os
import sys
import time
import warnings

import onnx
import onnx.numpy_helper
import torch
import torchvision
from torchvision.models import convnext

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


M = torchvision.models
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

SEED = 20240607

# torch 1.13 compares every pair of initializers to merge duplicates, which
# takes longer than the rest of the export for large models. torchvision
# CNNs share no weights, so there is nothing to merge: skip the pass.
torch._C._jit_pass_onnx_deduplicate_initializers = lambda graph, params, training: params


def case_name(arch, opset):
    return f"{arch}_opset{opset}"


def randomise(model, gen):
    """Gives the model trained-like parameters (in place)."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear)) and m.bias is not None:
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
        model(make_input((2,) + tuple(shape[1:]), gen))
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


def export_case(out_dir, arch, build, opset, shape, opts):
    name = case_name(arch, opset)
    d = os.path.join(out_dir, name)
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
    ops = sorted({n.op_type for n in proto.graph.node})
    if keep_bn and "BatchNormalization" not in ops:
        raise RuntimeError(f"{name}: BatchNormalization nodes were folded away")
    for fname, t in (("input_0.pb", x), ("output_0.pb", y)):
        with open(os.path.join(data, fname), "wb") as f:
            f.write(onnx.numpy_helper.from_array(t.numpy(), name).SerializeToString())
    return name, len(proto.graph.node), ops


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out_dir")
    p.add_argument("--only", nargs="+", metavar="NAME",
                   help="case (<arch>_opset<N>) or architecture names; may name opt-in cases")
    p.add_argument("--list", action="store_true", help="list the cases and exit")
    args = p.parse_args()
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
    torch.set_num_threads(2)
    os.makedirs(args.out_dir, exist_ok=True)
    for arch, build, opset, shape, opts in cases:
        t0 = time.time()
        name, nodes, ops = export_case(args.out_dir, arch, build, opset, shape, opts)
        print(f"exported {name}: {nodes} nodes, {time.time() - t0:.1f} s, ops {' '.join(ops)}",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
