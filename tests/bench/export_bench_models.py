#!/usr/bin/python3
"""Exports the torchvision models of tests/bench/engine_vs_ort.sh, once.

Usage: export_bench_models.py CACHE_DIR [NAME...] [--list]

One model per family the project supports, at the size it is deployed at
(224x224, 299x299 for Inception v3, batch 1, opset 17), with the seeded,
trained-like random weights of tests/models/export_torchvision.py (its
export_case is reused, so the ONNX files are written exactly as the
correctness tests write theirs, BatchNormalization folded into Conv as in
deployment). A model whose CACHE_DIR/<arch>_opset17/model.onnx exists is not
exported again; an export goes to a temporary directory first, so an
interrupted one never leaves a partial model behind.

Prints one line per model, for the calling script to read:
    model NAME PATH          (exported now or found in the cache)
    failed NAME: REASON      (the other models are still exported)
Exit status 0 even when some export failed; 2 on a usage error. Needs
Debian's python3-torch, python3-torchvision and python3-onnx.
"""
import os
import shutil
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))

OPSET = 17


def _cases():
    import torchvision
    M = torchvision.models
    # (arch, builder, input shape); weights=None everywhere: random weights.
    return [
        ("resnet50", lambda: M.resnet50(), (1, 3, 224, 224)),
        ("densenet121", lambda: M.densenet121(), (1, 3, 224, 224)),
        ("googlenet", lambda: M.googlenet(aux_logits=False, init_weights=True), (1, 3, 224, 224)),
        ("inception_v3", lambda: M.inception_v3(aux_logits=False, init_weights=True), (1, 3, 299, 299)),
        ("mobilenet_v3_small", lambda: M.mobilenet_v3_small(), (1, 3, 224, 224)),
        ("efficientnet_b0", lambda: M.efficientnet_b0(), (1, 3, 224, 224)),
        ("shufflenet_v2_x1_0", lambda: M.shufflenet_v2_x1_0(), (1, 3, 224, 224)),
        ("regnet_x_400mf", lambda: M.regnet_x_400mf(), (1, 3, 224, 224)),
        ("convnext_tiny", lambda: M.convnext_tiny(), (1, 3, 224, 224)),
        ("vit_b_16", lambda: M.vit_b_16(), (1, 3, 224, 224)),
    ]


NAMES = ["resnet50", "densenet121", "googlenet", "inception_v3", "mobilenet_v3_small",
         "efficientnet_b0", "shufflenet_v2_x1_0", "regnet_x_400mf", "convnext_tiny", "vit_b_16"]


def model_path(cache, arch):
    return os.path.join(cache, f"{arch}_opset{OPSET}", "model.onnx")


def main():
    args = sys.argv[1:]
    if "--list" in args:
        print("\n".join(NAMES))
        return 0
    if not args or args[0].startswith("-"):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    cache, wanted = args[0], args[1:] or NAMES
    unknown = [n for n in wanted if n not in NAMES]
    if unknown:
        print(f"export_bench_models: unknown model(s) {' '.join(unknown)}; known: {' '.join(NAMES)}",
              file=sys.stderr)
        return 2
    os.makedirs(cache, exist_ok=True)
    todo = [n for n in wanted if not os.path.exists(model_path(cache, n))]
    for n in wanted:
        if n not in todo:
            print(f"model {n} {model_path(cache, n)}", flush=True)
    if not todo:
        return 0
    try:
        import torch
        import export_torchvision as ex
        torch.set_num_threads(2)
        cases = {arch: (build, shape) for arch, build, shape in _cases()}
    except Exception as e:  # the whole exporter is unusable: every model fails
        for n in todo:
            print(f"failed {n}: cannot load the exporter: {type(e).__name__}: {e}", flush=True)
        return 0
    for n in todo:
        build, shape = cases[n]
        t0 = time.time()
        tmp = tempfile.mkdtemp(prefix=".export-", dir=cache)
        try:
            name, nodes, ops = ex.export_case(tmp, n, build, OPSET, shape, {})
            final = os.path.dirname(model_path(cache, n))
            shutil.rmtree(final, ignore_errors=True)
            os.rename(os.path.join(tmp, name), final)
            print(f"# exported {n} in {time.time() - t0:.0f} s: {nodes} nodes, ops {' '.join(ops)}",
                  flush=True)
            print(f"model {n} {model_path(cache, n)}", flush=True)
        except Exception as e:
            last = traceback.extract_tb(e.__traceback__)[-1]
            reason = " ".join(f"{type(e).__name__}: {e}".split())[:300]
            print(f"failed {n}: {reason} (at {os.path.basename(last.filename)}:{last.lineno})",
                  flush=True)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
