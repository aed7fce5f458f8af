#!/usr/bin/python3
"""Exports the torchvision equivalents of the SL2610 reference models.

Usage: export_sl2610_equivalents.py OUT_DIR [--only NAME...]

The real chip's discovery results in ../shared/reference/sl2610/ were made
on timm exports; timm is not packaged in Debian, so the calibration check
runs our discovery on the torchvision architecture with the same layer
kinds (seeded random, trained-like weights, BatchNorm folded as in the timm
exports) at the input size and opset of the reference:

    OUT_DIR/<name>/model.onnx  (+ test_data_set_0 with the PyTorch output)

Names and their references:
    alexnet          alexnet_Opset17            224x224, opset 17
    resnet50         resnet50_Opset18_timm      224x224, opset 18 (exported 17)
    efficientnet_b1  efficientnet_b1_Opset17_timm  240x240, opset 17
    inception_v3     inception_v3_Opset17_timm  299x299, opset 17
    regnet_x_400mf   regnetx_320_Opset18        224x224 (a small RegNetX:
                     the same layer kinds, group convs; regnet_x_32gf is
                     430 MB)
Debian's PyTorch 1.13 exports opsets up to 17; an opset-18 reference is
compared with an opset-17 export (no op of these models changed in 18).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
import export_torchvision as ex  # noqa: E402  (seeded weights, BN calibration, export)

M = ex.torchvision.models
MODELS = {
    "alexnet": (lambda: M.alexnet(), (1, 3, 224, 224)),
    "resnet50": (lambda: M.resnet50(), (1, 3, 224, 224)),
    "efficientnet_b1": (lambda: M.efficientnet_b1(), (1, 3, 240, 240)),
    "inception_v3": (lambda: M.inception_v3(aux_logits=False, transform_input=False, init_weights=True),
                     (1, 3, 299, 299)),
    "regnet_x_400mf": (lambda: M.regnet_x_400mf(), (1, 3, 224, 224)),
}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out_dir")
    p.add_argument("--only", nargs="*")
    a = p.parse_args()
    for name, (build, shape) in MODELS.items():
        if a.only and name not in a.only:
            continue
        final = os.path.join(a.out_dir, name)
        if os.path.exists(os.path.join(final, "model.onnx")):
            print(f"{name}: cached")
            continue
        case, nodes, ops = ex.export_case(a.out_dir, name, build, 17, shape, {})
        os.replace(os.path.join(a.out_dir, case), final)
        print(f"{name}: {nodes} nodes, ops {' '.join(ops)}")


if __name__ == "__main__":
    main()
