#!/usr/bin/env python3
"""How long planning takes on large graphs (#20: a 20,000-node graph partitions in < 2 s).

Writes generated models — a chain of element-wise ops (a residual Add every seventh node) and
a stack of transformer blocks written out op by op (LayerNorm, projections, attention with a
mask and softmax, GELU, residuals: about 40 nodes a block) — then times `braze inspect` on
each: the seconds `braze inspect --json` reports for the compile script's steps (import,
passes, precision, the fusion plan, codegen), from the run of --repeat that planned fastest. CPU only.

  python3 bench/partition_scale.py --braze build/cli/braze [--nodes 3000,6000,20000] [--llm 200]
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


def chain(n):
    ops = ["Relu", "Neg", "Abs", "Sigmoid", "Tanh"]
    nodes, prev = [], "x"
    for i in range(n):
        out = f"v{i}"
        if i % 7 == 3:
            nodes.append(helper.make_node("Add", [prev, "x"], [out], name=f"n{i}"))
        else:
            nodes.append(helper.make_node(ops[i % 5], [prev], [out], name=f"n{i}"))
        prev = out
    io = lambda name: helper.make_tensor_value_info(name, TensorProto.FLOAT, [64, 256])
    return helper.make_graph(nodes, "chain", [io("x")], [io(prev)])


class Blocks:
    """Transformer blocks over [1, S, D] with H heads, weights shared by every block."""

    def __init__(self, s=128, d=256, h=4):
        self.s, self.d, self.h, self.nodes, self.k = s, d, h, [], 0

    def op(self, kind, inputs, **attrs):
        self.k += 1
        out = f"t{self.k}"
        self.nodes.append(helper.make_node(kind, inputs, [out], name=f"{kind}_{self.k}", **attrs))
        return out

    def layer_norm(self, x):
        mean = self.op("ReduceMean", [x, "axis_last"])
        c = self.op("Sub", [x, mean])
        var = self.op("ReduceMean", [self.op("Mul", [c, c]), "axis_last"])
        return self.op("Add", [self.op("Mul", [self.op("Div", [c, self.op("Sqrt", [self.op("Add", [var, "eps"])])]), "gamma"]), "beta"])

    def heads(self, x):  # [1,S,D] -> [1,H,S,D/H]
        return self.op("Transpose", [self.op("Reshape", [x, "heads_shape"])], perm=[0, 2, 1, 3])

    def block(self, x):
        n = self.layer_norm(x)
        q, k, v = (self.heads(self.op("Add", [self.op("MatMul", [n, w]), "bias"])) for w in ("wq", "wk", "wv"))
        scores = self.op("Add", [self.op("Div", [self.op("MatMul", [q, self.op("Transpose", [k], perm=[0, 1, 3, 2])]), "scale"]), "mask"])
        ctx = self.op("MatMul", [self.op("Softmax", [scores], axis=-1), v])
        merged = self.op("Reshape", [self.op("Transpose", [ctx], perm=[0, 2, 1, 3]), "model_shape"])
        x = self.op("Add", [x, self.op("Add", [self.op("MatMul", [merged, "wo"]), "bias"])])
        u = self.op("Add", [self.op("MatMul", [self.layer_norm(x), "w1"]), "bias4"])
        gelu = self.op("Mul", [self.op("Mul", [u, "half"]), self.op("Add", [self.op("Erf", [self.op("Div", [u, "sqrt2"])]), "one"])])
        return self.op("Add", [x, self.op("Add", [self.op("MatMul", [gelu, "w2"]), "bias"])])

    def graph(self, n):
        s, d, h = self.s, self.d, self.h
        x = "x"
        while len(self.nodes) < n:
            x = self.block(x)
        rng = np.random.default_rng(0)
        f = lambda name, *shape: numpy_helper.from_array((rng.standard_normal(shape) * 0.02).astype(np.float32), name)
        c = lambda name, value: numpy_helper.from_array(np.array(value, dtype=np.float32), name)
        i64 = lambda name, value: numpy_helper.from_array(np.array(value, dtype=np.int64), name)
        inits = [f("wq", d, d), f("wk", d, d), f("wv", d, d), f("wo", d, d), f("w1", d, 4 * d), f("w2", 4 * d, d),
                 f("bias", d), f("bias4", 4 * d), f("gamma", d), f("beta", d), c("eps", 1e-5), c("scale", (d / h) ** 0.5),
                 c("half", 0.5), c("one", 1.0), c("sqrt2", 2 ** 0.5), f("mask", 1, 1, 1, s),
                 i64("axis_last", [-1]), i64("heads_shape", [1, s, h, d // h]), i64("model_shape", [1, s, d])]
        io = lambda name: helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, s, d])
        return helper.make_graph(self.nodes, "blocks", [io("x")], [io(x)], inits)


def llm_export(layers, path, optimize):
    """A real export: transformers' LlamaModel (TinyLlama's layout at very narrow widths — GQA,
    RMSNorm, rotary, SiLU-gated MLP — so a 200-layer file stays small: the node count does not
    depend on the widths) with `layers` layers, by torch.onnx.export(dynamo=True) on the CPU,
    with or without the exporter's graph optimiser (which alone ran past 380 s on 200 layers).
    Needs torch and transformers (the GPU machine has them); returns the nodes."""
    import torch
    from transformers import LlamaConfig, LlamaModel
    torch.manual_seed(0)
    cfg = LlamaConfig(hidden_size=32, intermediate_size=64, num_attention_heads=2,
                      num_key_value_heads=1, num_hidden_layers=layers, vocab_size=256,
                      max_position_embeddings=512, attn_implementation="sdpa",
                      use_cache=False)
    model = LlamaModel(cfg).eval()
    ids = torch.randint(0, cfg.vocab_size, (1, 128), dtype=torch.int64)
    with torch.no_grad():
        torch.onnx.export(model, (ids,), path, dynamo=True, external_data=True,
                          input_names=["input_ids"], output_names=["out"], optimize=optimize)
    return len(onnx.load(path, load_external_data=False).graph.node)


def best_seconds(cmd, repeat):
    """`braze inspect --json`'s step times, the run with the least planning time of `repeat`."""
    best = None
    for _ in range(repeat):
        r = subprocess.run(cmd + ["--json"], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed: {r.stderr.strip()[-500:]}")
        s = {step["name"]: step["seconds"] for step in json.loads(r.stdout)["steps"]}
        if best is None or s["plan"] < best["plan"]:
            best = s
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--braze", default="build/cli/braze")
    ap.add_argument("--nodes", default="3000,6000,20000")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--llm", type=int, default=0, metavar="LAYERS",
                    help="also time a real LlamaModel export with this many layers (needs torch "
                         "and transformers)")
    ap.add_argument("--llm-optimize", action="store_true",
                    help="export with torch.onnx's graph optimiser (optimize=True)")
    ap.add_argument("--llm-path", default="", metavar="FILE",
                    help="where the LLM export is written (kept; an existing file is reused)")
    args = ap.parse_args()
    # The attention and tensor-core phases plan for sm_90a at fp16, as a Hopper build does.
    plan_for = ["--arch", "sm_90a", "--precision", "fp16"]
    print("| graph | nodes | plan | import | passes | precision | codegen (inspect) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(v) for v in args.nodes.split(",") if v):  # --nodes "": the LLM only
            for name, g in (("chain", chain(n)), ("transformer blocks", Blocks().graph(n))):
                path = os.path.join(tmp, f"{name.split()[0]}{n}.onnx")
                onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)]), path)
                s = best_seconds([args.braze, "inspect", path] + plan_for, args.repeat)
                print(f"| {name} | {len(g.node)} | {s['plan']:.2f} s | {s['import']:.2f} s | "
                      f"{s['passes']:.2f} s | {s['precision']:.2f} s | {s['codegen']:.2f} s |",
                      flush=True)
        if args.llm:
            path = args.llm_path or os.path.join(tmp, "llama.onnx")
            if os.path.exists(path):
                nodes = len(onnx.load(path, load_external_data=False).graph.node)
            else:
                nodes = llm_export(args.llm, path, args.llm_optimize)
            s = best_seconds([args.braze, "inspect", path, "--shapes", "input_ids:1x128"] + plan_for,
                             args.repeat)
            print(f"| LlamaModel export, {args.llm} layers{', optimised' if args.llm_optimize else ''} | {nodes} | {s['plan']:.2f} s | "
                  f"{s['import']:.2f} s | {s['passes']:.2f} s | {s['precision']:.2f} s | "
                  f"{s['codegen']:.2f} s |", flush=True)


if __name__ == "__main__":
    main()
