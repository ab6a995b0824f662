#!/usr/bin/env python3
"""One GEMM kernel at a time, braze against cuBLAS, on the products the model rows run
(GPU machine; issue #16 item 6).

For each product: an ONNX model of the MatMul (a float16 activation against a constant
[K, N] weight, as the exporters write a Linear, with an optional bias Add and GELU; batched
products take both operands as inputs), then

  - `braze bench --precision fp16` with heuristics and with `--tune` (every candidate's
    median printed by the tuner), the GEMM kernel's median from the per-kernel table;
  - torch.matmul (cuBLAS) on the same (batch, M, N, K) in float16, triton's do_bench, L2
    flushed, as bench/models.py times it;
  - with --ncu: Nsight Compute's speed-of-light, memory and warp-state sections of braze's
    heuristic kernel and of cuBLAS's kernel (its name gives cuBLAS's tile and cluster).

  python3 bench/gemm_probe.py --braze build-gpu/cli/braze --out OUTDIR [--only qkv,ffn_up] [--ncu]
"""
import argparse
import fnmatch
import json
import os
import subprocess
import sys

import numpy as np

# name: (batch, m, n, k, epilogue); epilogue "" (none), "bias" (an Add), "bias_gelu",
# "bias_residual" (an Add of the bias, then of an [m, n] input), "gemm_bias" (a Gemm with the
# bias as C); a sixth field "f32" makes the model float32 (braze's exact SIMT schedule against
# cuBLAS's SGEMM, TF32 off), float16 otherwise
SHAPES = {
    "bert_qkv": (1, 1024, 2304, 768, "bias"),
    "gpt2_qkv": (1, 1024, 2304, 768, "gemm_bias"),
    "ffn_up": (1, 1024, 3072, 768, "bias_gelu"),
    "ffn_down": (1, 1024, 768, 3072, "bias"),
    "out_proj": (1, 1024, 768, 768, "bias"),
    "llama_qkv": (1, 512, 2560, 2048, ""),
    "llama_down": (1, 512, 2048, 5632, ""),
    "llama_up": (1, 512, 5632, 2048, ""),
    "bert_qk": (96, 128, 128, 64, ""),
    "b1_proj": (1, 128, 768, 768, "bias"),
    "b1_ffn_down": (1, 128, 768, 3072, "bias"),
    "b32_qkv": (1, 4096, 2304, 768, "bias"),
    "b32_ffn_up": (1, 4096, 3072, 768, "bias_gelu"),
    "b32_ffn_up_nogelu": (1, 4096, 3072, 768, "bias"),  # what GELU costs in b32_ffn_up
    "b32_ffn_down": (1, 4096, 768, 3072, "bias"),
    "b32_ffn_down_res": (1, 4096, 768, 3072, "bias_residual"),  # as in the model
    "b32_out_proj": (1, 4096, 768, 768, "bias"),
    "b32_out_proj_res": (1, 4096, 768, 768, "bias_residual"),  # BERT b32's; GPT-2 b8 s512's
    "ffn_down_res": (1, 1024, 768, 3072, "bias_residual"),  # BERT b8's FFN down as in the model
    # BERT-base b1 s128 in float32 (bench/models.py's bert-b1-s128-fp32): SIMT products
    "f32_b1_qkv": (1, 128, 2304, 768, "bias", "f32"),
    "f32_b1_proj_res": (1, 128, 768, 768, "bias_residual", "f32"),
    "f32_b1_ffn_up": (1, 128, 3072, 768, "bias_gelu", "f32"),
    "f32_b1_ffn_down_res": (1, 128, 768, 3072, "bias_residual", "f32"),
    # larger float32 products, where 128 x 64 and 128 x 128 register-staged tiles lead
    "f32_m1024_qkv": (1, 1024, 2304, 768, "bias", "f32"),
    "f32_m4096_ffn_down": (1, 4096, 768, 3072, "bias", "f32"),
}


def build_onnx(path, b, m, n, k, epi, f32=False):
    import onnx
    from onnx import TensorProto as T, helper as h, numpy_helper as nh
    rng = np.random.default_rng(0)
    ET, npt = (T.FLOAT, np.float32) if f32 else (T.FLOAT16, np.float16)
    inits, nodes, inputs = [], [], []
    if b == 1:
        inputs.append(h.make_tensor_value_info("x", ET, [m, k]))
        inits.append(nh.from_array((rng.standard_normal((k, n)) * 0.05).astype(npt), "w"))
        if epi == "gemm_bias":  # GPT-2's Conv1D: Gemm with the bias as C
            inits.append(nh.from_array((rng.standard_normal(n) * 0.1).astype(npt), "bias"))
            nodes.append(h.make_node("Gemm", ["x", "w", "bias"], ["y0"]))
        else:
            nodes.append(h.make_node("MatMul", ["x", "w"], ["y0"]))
    else:
        inputs.append(h.make_tensor_value_info("x", ET, [b, m, k]))
        inputs.append(h.make_tensor_value_info("w", ET, [b, k, n]))
        nodes.append(h.make_node("MatMul", ["x", "w"], ["y0"]))
    last = "y0"
    if epi.startswith("bias"):  # an Add after the product
        inits.append(nh.from_array((rng.standard_normal(n) * 0.1).astype(npt), "bias"))
        nodes.append(h.make_node("Add", [last, "bias"], ["y1"]))
        last = "y1"
    if epi.endswith("gelu"):
        nodes.append(h.make_node("Gelu", [last], ["y2"]))
        last = "y2"
    if epi.endswith("residual"):  # BERT's FFN down and output projection: + the block's input
        out = [m, n] if b == 1 else [b, m, n]
        inputs.append(h.make_tensor_value_info("r", ET, out))
        nodes.append(h.make_node("Add", [last, "r"], ["y3"]))
        last = "y3"
    out_shape = [m, n] if b == 1 else [b, m, n]
    g = h.make_graph(nodes, "gemm", inputs, [h.make_tensor_value_info(last, ET, out_shape)], inits)
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 20)]), path)


def run(cmd, log, timeout=300):
    with open(log, "w") as f:
        f.write(" ".join(cmd) + "\n")
        f.flush()
        p = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, timeout=timeout)
    return p.returncode


def gemm_us(bench_json):
    with open(bench_json) as f:
        j = json.load(f)
    for k in j.get("kernels", []):
        if k.get("gemm"):
            return k["median_us"], k["name"], k.get("tunables")
    return None, None, None


def torch_us(b, m, n, k, f32=False):
    import torch
    import triton.testing
    torch.backends.cuda.matmul.allow_tf32 = False  # float32: SGEMM, as braze's exact schedule
    dt = torch.float32 if f32 else torch.float16
    a = torch.randn(b, m, k, device="cuda", dtype=dt)
    w = torch.randn(b, k, n, device="cuda", dtype=dt) if b > 1 else torch.randn(k, n, device="cuda", dtype=dt)
    x = a if b > 1 else a[0]
    return triton.testing.do_bench(lambda: torch.matmul(x, w), warmup=25, rep=100, return_mode="median") * 1e3


NCU_SECTIONS = ["SpeedOfLight", "MemoryWorkloadAnalysis", "MemoryWorkloadAnalysis_Tables", "WarpStateStats",
                "LaunchStats", "Occupancy"]


def ncu(cmd, kernel_regex, log):
    sec = sum((["--section", s] for s in NCU_SECTIONS), [])
    return run(["ncu", "--clock-control", "none", "-k", f"regex:{kernel_regex}", "-c", "1"] + sec + cmd, log, 600)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--braze", default="build-gpu/cli/braze")
    ap.add_argument("--out", default=os.environ.get("OUT", "probe-out"))
    ap.add_argument("--only", default="")
    ap.add_argument("--ncu", action="store_true")
    ap.add_argument("--no-tune", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    pats = [p for p in args.only.split(",") if p]
    rows = []
    for name, (b, m, n, k, epi, *rest) in SHAPES.items():
        f32 = rest == ["f32"]
        if pats and not any(fnmatch.fnmatch(name, p) for p in pats):
            continue
        d = os.path.join(args.out, name)
        os.makedirs(d, exist_ok=True)
        model = os.path.join(d, "model.onnx")
        build_onnx(model, b, m, n, k, epi, f32)
        env_cache = ["--tuning-cache", os.path.join(d, "tuning.json")]
        run([args.braze, "bench", model, "--json", os.path.join(d, "heur.json")], os.path.join(d, "heur.txt"))
        heur, kname, _ = gemm_us(os.path.join(d, "heur.json"))
        tuned = None
        if not args.no_tune:
            run([args.braze, "bench", model, "--tune", "--json", os.path.join(d, "tuned.json")] + env_cache,
                os.path.join(d, "tuned.txt"))
            tuned, _, _ = gemm_us(os.path.join(d, "tuned.json"))
        t = torch_us(b, m, n, k, f32)
        row = {"name": name, "batch": b, "m": m, "n": n, "k": k, "epilogue": epi,
               "dtype": "float32" if f32 else "float16", "kernel": kname,
               "heuristic_us": heur, "tuned_us": tuned, "torch_us": t}
        rows.append(row)
        print(f"{name:12s} b{b} {m}x{n}x{k} {epi:9s} heuristic {heur} us  tuned {tuned} us  torch.matmul {t:.2f} us"
              f"  ratio {heur / t if heur else float('nan'):.2f} / {tuned / t if tuned else float('nan'):.2f}", flush=True)
        if args.ncu:
            ncu([args.braze, "run", model], "braze_gemm", os.path.join(d, "ncu_braze.txt"))
            dt = "torch.float32" if f32 else "torch.float16"
            py = (f"import torch; torch.backends.cuda.matmul.allow_tf32=False; b,m,n,k={b},{m},{n},{k}; a=torch.randn(b,m,k,device='cuda',dtype={dt});"
                  f"w=torch.randn(b,k,n,device='cuda',dtype={dt}) if b>1 else torch.randn(k,n,device='cuda',dtype={dt});"
                  f"x=a if b>1 else a[0]; [torch.matmul(x,w) for _ in range(3)]; torch.cuda.synchronize()")
            ncu([sys.executable, "-c", py], "gemm|nvjet|sm90|cutlass|xmma", os.path.join(d, "ncu_torch.txt"))
    with open(os.path.join(args.out, "probe.json"), "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
