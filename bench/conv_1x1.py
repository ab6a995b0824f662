#!/usr/bin/env python3
"""1x1 convolutions as GEMMs (#19): braze's conv_as_matmul against the direct loop it replaces.

For each 1x1 convolution shape of ResNet-50 (torchvision, 224x224) — Conv + bias + Relu —
writes two ONNX models computing the same thing: one with the weights as a constant (the
pass rewrites the Conv into a GEMM) and one with the weights as a graph input (the pass
leaves it: the Conv runs as today's loop per output element). Times both with `braze bench`
(median, L2 flushed before each run) at the given precision, in the same run on the GPU: the
convolution's own kernel against the GEMM kernel (end to end also holds the fp32 -> fp16
conversions of the graph's input and output, and for the direct loop of the weights).

  python3 bench/conv_1x1.py --braze build-gpu/cli/braze [--batch 1,32] [--precision fp16]
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

# (in channels, out channels, height = width) of ResNet-50's 1x1 convolutions, one per shape.
SHAPES = [(64, 256, 56), (256, 64, 56), (256, 128, 56), (512, 128, 28), (128, 512, 28),
          (1024, 256, 14), (256, 1024, 14), (2048, 512, 7), (512, 2048, 7)]


def model(n, c, m, h, weights_constant, path):
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((m, c, 1, 1)) / np.sqrt(c)).astype(np.float32)
    b = rng.standard_normal(m).astype(np.float32)
    inits = [numpy_helper.from_array(b, "b")]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, c, h, h])]
    if weights_constant:
        inits.append(numpy_helper.from_array(w, "w"))
    else:
        inputs.append(helper.make_tensor_value_info("w", TensorProto.FLOAT, [m, c, 1, 1]))
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["y0"]), helper.make_node("Relu", ["y0"], ["y"])]
    out = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n, m, h, h])]
    g = helper.make_graph(nodes, "conv1x1", inputs, out, inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]), path)


def bench(braze, path, precision, tmp):
    js = os.path.join(tmp, "bench.json")
    r = subprocess.run([braze, "bench", path, "--precision", precision, "--json", js],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"braze bench {path}: {r.stderr.strip()[-400:]}")
    j = json.load(open(js))
    conv = [k for k in j["kernels"] if "Conv" in k["name"] or "MatMul" in k["name"]]
    if len(conv) != 1:
        sys.exit(f"{path}: expected one convolution or GEMM kernel, got {[k['name'] for k in j['kernels']]}")
    return j["latency_us"]["median"], conv[0]["median_us"], conv[0]["schedule"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--braze", default="build-gpu/cli/braze")
    ap.add_argument("--batch", default="1,32")
    ap.add_argument("--precision", default="fp16")
    args = ap.parse_args()
    print("| batch | C -> M @ HxW | GFLOP | direct loop kernel | GEMM kernel | schedule | kernel speed-up | end to end (direct / GEMM) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(v) for v in args.batch.split(",")):
            for c, m, h in SHAPES:
                gflop = 2 * n * c * m * h * h / 1e9
                times = []
                for constant in (False, True):
                    path = os.path.join(tmp, f"c{int(constant)}.onnx")
                    model(n, c, m, h, constant, path)
                    times.append(bench(args.braze, path, args.precision, tmp))
                (e2e_d, direct, _), (e2e_g, gemm, sched) = times
                print(f"| {n} | {c} -> {m} @ {h}x{h} | {gflop:.2f} | {direct:.1f} µs | {gemm:.1f} µs | "
                      f"{sched} | {direct / gemm:.1f}x | {e2e_d:.1f} / {e2e_g:.1f} µs |", flush=True)


if __name__ == "__main__":
    main()
