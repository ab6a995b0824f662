#!/usr/bin/env python3
"""Convolution workloads against cuDNN (#19), in the same run on the GPU.

Each workload is one convolution of ResNet-50 or MobileNetV2 with its bias and activation
(Relu; ReLU6 for the depthwise one), as a float16 ONNX model that takes and gives its
activations channels-last ([N, H, W, C], Transposes around the Conv: braze's passes cancel them
against its own, so the model measures a convolution in the middle of a channels-last network).
braze: `braze bench` (median of 100 runs, L2 flushed before each) — end to end and the sum of its
kernels' medians. PyTorch: F.conv2d + bias and the activation on channels_last float16 tensors
(cuDNN, torch.backends.cudnn.benchmark on), triton.testing.do_bench (median, L2 flushed before
each run). The outputs are compared (rel L2 of braze's against PyTorch's).

  python3 bench/convs.py --braze build-gpu/cli/braze [--only stem,dw3x3] [--out DIR]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# name: (batch, in channels, out channels, height = width, kernel, stride, pad, groups)
WORKLOADS = {
    "stem7x7s2": (32, 3, 64, 224, 7, 2, 3, 1),
    "3x3-64@56": (32, 64, 64, 56, 3, 1, 1, 1),
    "3x3s2-128@56": (32, 128, 128, 56, 3, 2, 1, 1),
    "3x3-256@14": (32, 256, 256, 14, 3, 1, 1, 1),
    "3x3-512@7": (32, 512, 512, 7, 3, 1, 1, 1),
    "1x1-64to256@56": (32, 64, 256, 56, 1, 1, 0, 1),
    "1x1-256to64@56": (32, 256, 64, 56, 1, 1, 0, 1),
    "1x1-512to128@28": (32, 512, 128, 28, 1, 1, 0, 1),
    "1x1-128to512@28": (32, 128, 512, 28, 1, 1, 0, 1),
    "1x1-1024to256@14": (32, 1024, 256, 14, 1, 1, 0, 1),
    "1x1-256to1024@14": (32, 256, 1024, 14, 1, 1, 0, 1),
    "1x1-2048to512@7": (32, 2048, 512, 7, 1, 1, 0, 1),
    "1x1-512to2048@7": (32, 512, 2048, 7, 1, 1, 0, 1),
    "dw3x3-144@56": (32, 144, 144, 56, 3, 1, 1, 144),
    "dw3x3s2-96@112": (32, 96, 96, 112, 3, 2, 1, 96),
}


def out_size(h, k, s, p):
    return (h + 2 * p - k) // s + 1


def weights(n, c, m, h, k, s, p, g):
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((m, c // g, k, k)) / np.sqrt(c // g * k * k)).astype(np.float16)
    b = (rng.standard_normal(m) * 0.1).astype(np.float16)
    return w, b


def model(spec, path):
    n, c, m, h, k, s, p, g = spec
    w, b = weights(*spec)
    o = out_size(h, k, s, p)
    act = [helper.make_node("Clip", ["y0", "lo", "hi"], ["y1"])] if g > 1 else \
        [helper.make_node("Relu", ["y0"], ["y1"])]
    nodes = [helper.make_node("Transpose", ["x"], ["xc"], perm=[0, 3, 1, 2]),
             helper.make_node("Conv", ["xc", "w", "b"], ["y0"], kernel_shape=[k, k], strides=[s, s],
                              pads=[p] * 4, group=g)] + act + \
        [helper.make_node("Transpose", ["y1"], ["y"], perm=[0, 2, 3, 1])]
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b"),
             numpy_helper.from_array(np.array(0, np.float16), "lo"),
             numpy_helper.from_array(np.array(6, np.float16), "hi")]
    graph = helper.make_graph(nodes, "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [n, h, h, c])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [n, o, o, m])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), path)


def braze_row(braze, spec, tmp, x):
    path, xs = os.path.join(tmp, "conv.onnx"), os.path.join(tmp, "x.npy")
    model(spec, path)
    np.save(xs, x)
    js = os.path.join(tmp, "bench.json")
    r = subprocess.run([braze, "bench", path, "--precision", "fp16", "--inputs", xs, "--json", js,
                        "--iters", "100"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"braze bench: {(r.stdout + r.stderr)[-800:]}")
    j = json.load(open(js))
    out = os.path.join(tmp, "out")
    r = subprocess.run([braze, "run", path, "--precision", "fp16", "--inputs", xs, "--outputs", out],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"braze run: {(r.stdout + r.stderr)[-800:]}")
    got = np.load(os.path.join(out, "y.npy"))
    kernels = [(k["name"], k["median_us"], k.get("schedule", "")) for k in j["kernels"]]
    return j["latency_us"]["median"], kernels, got


def torch_row(spec, x):
    import torch
    import torch.nn.functional as F
    import triton.testing
    torch.backends.cudnn.benchmark = True
    n, c, m, h, k, s, p, g = spec
    w, b = weights(*spec)
    xt = torch.from_numpy(x).cuda().permute(0, 3, 1, 2)  # NCHW view of NHWC memory: channels_last
    wt = torch.from_numpy(w).cuda().to(memory_format=torch.channels_last)
    bt = torch.from_numpy(b).cuda()
    act = (lambda y: F.hardtanh_(y, 0, 6)) if g > 1 else F.relu_
    conv = lambda: F.conv2d(xt, wt, bt, stride=s, padding=p, groups=g)
    full = lambda: act(conv())
    want = full().permute(0, 2, 3, 1).float().cpu().numpy()
    bench = lambda f: triton.testing.do_bench(f, warmup=50, rep=300, return_mode="median") * 1e3
    return bench(conv), bench(full), want


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--braze", default="build-gpu/cli/braze")
    ap.add_argument("--only", default="", help="comma-separated workload names (default all)")
    ap.add_argument("--out", default="", help="also write the table and the kernels as JSON here")
    args = ap.parse_args()
    names = [w for w in args.only.split(",") if w] or list(WORKLOADS)
    print("| workload | N, C -> M, HxW, kernel / stride / groups | GFLOP | braze end to end | braze kernels | "
          "cuDNN conv+bias | cuDNN conv+bias+act | cuDNN ÷ braze (speed) | braze kernels (µs, schedule) | rel L2 |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            spec = WORKLOADS[name]
            n, c, m, h, k, s, p, g = spec
            o = out_size(h, k, s, p)
            gflop = 2 * n * m * o * o * (c // g) * k * k / 1e9
            x = np.random.default_rng(1).standard_normal((n, h, h, c)).astype(np.float16)
            e2e, kernels, got = braze_row(args.braze, spec, tmp, x)
            conv_us, full_us, want = torch_row(spec, x)
            ksum = sum(t for _, t, _ in kernels)
            rel = float(np.linalg.norm(got.astype(np.float64) - want) / np.linalg.norm(want))
            detail = ", ".join(f"{t:.1f} {sch or nm.split('_')[1]}" for nm, t, sch in kernels)
            print(f"| {name} | {n}, {c} -> {m}, {h}x{h}, {k}x{k} / {s} / {g} | {gflop:.2f} | {e2e:.1f} µs | "
                  f"{ksum:.1f} µs | {conv_us:.1f} µs | {full_us:.1f} µs | {full_us / e2e:.2f}x | {detail} | "
                  f"{rel:.1e} |", flush=True)
            rows.append(dict(name=name, spec=spec, gflop=gflop, braze_us=e2e, braze_kernels=kernels,
                             cudnn_conv_us=conv_us, cudnn_full_us=full_us, rel_l2=rel))
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        json.dump(rows, open(os.path.join(args.out, "convs.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
