#!/usr/bin/env python3
"""What a class of ops costs a whole model end to end (a timing experiment, not a model).

Writes a copy of MODEL with every node of the named op types bypassed — its consumers read
its first input instead — where that input has the node's output shape and dtype (a
LayerNormalization, a Dropout, a Cast to the same type), compiles the model and the copy
with `braze compile`, and times both engines with `braze bench` in turn (L2 flushed, one
CUDA graph), ROUNDS times each, on the same inputs. The copy computes something else: its
time bounds what removing those ops' kernels (folding them into their neighbours) could
save, before the cost of doing so.

    python3 bench/ablate.py --braze build-gpu/cli/braze --model DIR/model.onnx \
        --inputs DIR/input_ids.npy DIR/attention_mask.npy --bypass LayerNormalization \
        --precision fp16 --out build-ablate

Needs the `onnx` package; the GPU for the timings.
"""
import argparse
import json
import os
import subprocess
import sys

import onnx
from onnx import shape_inference


def value_types(model):
    """name -> (elem_type, dims) for every value whose type shape inference knows."""
    inferred = shape_inference.infer_shapes(model)
    types = {}
    for v in list(inferred.graph.value_info) + list(inferred.graph.input) + list(inferred.graph.output):
        t = v.type.tensor_type
        if t.HasField("shape"):
            dims = tuple(d.dim_value if d.HasField("dim_value") else d.dim_param for d in t.shape.dim)
            types[v.name] = (t.elem_type, dims)
    for init in inferred.graph.initializer:
        types[init.name] = (init.data_type, tuple(init.dims))
    return types


def bypass(model, op_types):
    """Drops every node of op_types whose first input's type is its output's; returns the
    number dropped. Graph outputs produced by a dropped node are renamed to its input."""
    types = value_types(model)
    g = model.graph
    rename, kept, dropped = {}, [], 0
    for node in g.node:
        x = rename.get(node.input[0], node.input[0]) if node.input else None
        y = node.output[0] if node.output else None
        same = x is not None and y is not None and types.get(x) is not None and types.get(x) == types.get(y)
        if node.op_type in op_types and same:
            rename[y] = x
            dropped += 1
            continue
        for i, name in enumerate(node.input):
            if name in rename:
                node.input[i] = rename[name]
        kept.append(node)
    del g.node[:]
    g.node.extend(kept)
    for out in g.output:
        if out.name in rename:  # keep the graph's output name: an Identity from the input
            g.node.append(onnx.helper.make_node("Identity", [rename[out.name]], [out.name]))
    return dropped


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{(p.stdout + p.stderr)[-2000:]}")
    return p.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--braze", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--inputs", nargs="+", required=True)
    ap.add_argument("--bypass", nargs="+", required=True, help="op types to bypass")
    ap.add_argument("--precision", default="fp32")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    model = onnx.load(args.model)  # external data loaded beside the graph
    dropped = bypass(model, set(args.bypass))
    if dropped == 0:
        sys.exit(f"no node of {args.bypass} could be bypassed in {args.model}")
    copy = os.path.join(args.out, "bypassed.onnx")
    onnx.save(model, copy, save_as_external_data=True, location="bypassed.onnx.data")
    print(f"bypassed {dropped} nodes of {args.bypass}", flush=True)

    engines = {}
    for which, path in (("model", args.model), ("bypassed", copy)):
        engines[which] = os.path.join(args.out, f"{which}.braze")
        run([args.braze, "compile", path, "-o", engines[which], "--precision", args.precision])
    medians = {"model": [], "bypassed": []}
    for r in range(args.rounds):
        for which in ("model", "bypassed"):
            js = os.path.join(args.out, f"{which}_{r}.json")
            run([args.braze, "bench", engines[which], "--inputs"] + args.inputs +
                ["--iters", str(args.iters), "--json", js])
            medians[which].append(json.load(open(js))["latency_us"]["median"])
    best = {k: min(v) for k, v in medians.items()}
    for k, v in medians.items():
        print(f"{k:9} medians {' '.join(f'{x:.1f}' for x in v)} us, best {best[k]:.1f} us")
    print(f"bypassing {dropped} x {'/'.join(args.bypass)} saves {best['model'] - best['bypassed']:.1f} us "
          f"({100 * (1 - best['bypassed'] / best['model']):.1f}% of the model)")


if __name__ == "__main__":
    main()
