#!/usr/bin/env python3
"""Benchmarks braze against PyTorch on the GPU machine, in one run, on the same inputs.

For each workload: build it in PyTorch, export it to ONNX, compile and time it with
`braze bench --tune` (CUDA graph, median of repeats), time PyTorch eager, torch.compile and
torch.compile(mode="max-autotune") with triton.testing.do_bench (median), check that braze's
outputs agree with PyTorch's, and measure the device-to-device copy bandwidth in the same
run. Prints a table of ratios and writes JSON.

  python3 bench/run_bench.py --braze build-gpu/cli/braze --out OUTDIR [--only W1,W2,G3-*] [--no-max-autotune]

Workloads W1-W8 are issue #5's (memory-bound kernels and the MLP block); G1-G5 are issue #6's
GEMMs (M, N, K) in fp16, bf16, fp32 and tf32 (float32 models, braze --precision tf32 against
PyTorch with torch.backends.cuda.matmul.allow_tf32 = True), plain and with a bias + GELU
epilogue, against cuBLAS plain, cuBLAS plus PyTorch's separate epilogue, and
torch.compile(max-autotune); braze's output is checked against a float64 reference.
A1-A5 are issue #17's attention workloads (B, H, S, D) in float16, written out as the eager
exporters write them (Q Kᵀ · scale, a causal Where over a constant lower triangle, Softmax,
· V; GQA's K and V repeated by Unsqueeze / Expand / Reshape), against PyTorch's
scaled_dot_product_attention on every backend it has on the machine (the fastest is the
baseline), in TFLOP/s (a causal attention counts half the products).
"""
import argparse
import fnmatch
import json
import os
import subprocess
import time

import numpy as np
import torch
import torch.nn as nn
import triton.testing

DEV = "cuda"


class W1(nn.Module):  # y = gelu(x + b) * 0.5 + r
    def __init__(self):
        super().__init__()
        self.b = nn.Parameter(torch.randn(4096) * 0.1)

    def forward(self, x, r):
        return torch.nn.functional.gelu(x + self.b) * 0.5 + r


class Softmax(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)


class LayerNorm(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.ln = nn.LayerNorm(n)
        with torch.no_grad():
            self.ln.weight.uniform_(0.5, 1.5)
            self.ln.bias.uniform_(-0.5, 0.5)

    def forward(self, x):
        return self.ln(x)


class LlamaRMSNorm(nn.Module):  # as transformers' LlamaRMSNorm writes it
    def __init__(self, n, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(n) + 0.5)
        self.eps = eps

    def forward(self, x):
        dtype = x.dtype
        h = x.to(torch.float32)
        variance = h.pow(2).mean(-1, keepdim=True)
        h = h * torch.rsqrt(variance + self.eps)
        return self.weight * h.to(dtype)


class PermuteBias(nn.Module):
    def __init__(self):
        super().__init__()
        self.b = nn.Parameter(torch.randn(64) * 0.1)

    def forward(self, x):
        return x.permute(0, 2, 1, 3) + self.b


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(1024, 4096)
        self.down = nn.Linear(4096, 1024)
        self.ln = nn.LayerNorm(1024)

    def forward(self, x):
        return self.ln(self.down(torch.nn.functional.gelu(self.up(x))) + x)


class Linear(nn.Module):  # y = x W^T (plain) or gelu(x W^T + b) (epilogue)
    def __init__(self, k, n, epilogue):
        super().__init__()
        self.w = nn.Parameter(torch.randn(n, k) / k ** 0.5)
        self.b = nn.Parameter(torch.randn(n) * 0.1) if epilogue else None

    def forward(self, x):
        y = torch.nn.functional.linear(x, self.w, self.b)
        return torch.nn.functional.gelu(y) if self.b is not None else y


GEMM_SHAPES = {"G1": (4096, 3072, 768), "G2": (4096, 768, 3072), "G3": (8192, 8192, 8192),
               "G4": (128, 768, 768), "G5": (128, 3072, 768)}


# GEMM variants: (name, model dtype, braze --precision or None, PyTorch's allow_tf32). tf32 is
# a float32 model whose products both sides run on tensor cores with tf32 operands.
GEMM_PRECISIONS = (("fp16", torch.float16, None, False), ("bf16", torch.bfloat16, None, False),
                   ("fp32", torch.float32, None, False), ("tf32", torch.float32, "tf32", True))


def gemm_workloads():
    """G<n>-<precision>[-gelu]: (M, N, K) GEMMs of issue #6, plain and with a bias + GELU
    epilogue: (desc, model, input specs, dtype, (M, N, K), braze precision, allow_tf32)."""
    out = {}
    for name, (m, n, k) in GEMM_SHAPES.items():
        for p_name, dt, precision, allow_tf32 in GEMM_PRECISIONS:
            for epi in (False, True):
                key = f"{name}-{p_name}" + ("-gelu" if epi else "")
                desc = f"GEMM {m}x{n}x{k} {p_name}" + (" +bias+GELU" if epi else "")
                out[key] = (desc, Linear(k, n, epi), [((m, k), dt)], dt, (m, n, k), precision, allow_tf32)
    return out


def workloads():
    f32, f16 = torch.float32, torch.float16
    return {
        "W1": ("gelu(x+b)*0.5+r fp32 [16384,4096]", W1(), [((16384, 4096), f32), ((16384, 4096), f32)], f32),
        "W2": ("softmax fp32 [32768,1024]", Softmax(), [((32768, 1024), f32)], f32),
        "W3": ("softmax fp16 [4096,32000]", Softmax(), [((4096, 32000), f16)], f16),
        "W4": ("LayerNorm fp32 [32768,1024]", LayerNorm(1024), [((32768, 1024), f32)], f32),
        "W5": ("RMS norm (Llama) fp16 [16384,4096]", LlamaRMSNorm(4096), [((16384, 4096), f16)], f16),
        "W6": ("permute [8,128,12,64]->[8,12,128,64] + bias fp16", PermuteBias(), [((8, 128, 12, 64), f16)], f16),
        "W7": ("MLP fp16 [8192,1024]x4096 +x LN", MLP(), [((8192, 1024), f16)], f16),
        "W8": ("MLP fp32 [8192,1024]x4096 +x LN", MLP(), [((8192, 1024), f32)], f32),
    }


class Attention(nn.Module):
    """softmax(Q Kᵀ / sqrt(D) [causal]) V, with K and V of `kv_heads` heads repeated as
    transformers' repeat_kv does."""

    def __init__(self, causal, groups):
        super().__init__()
        self.causal, self.groups = causal, groups

    def forward(self, q, k, v):
        b, h, s, d = q.shape
        if self.groups > 1:
            kv = k.shape[1]
            k = k[:, :, None].expand(b, kv, self.groups, s, d).reshape(b, h, s, d)
            v = v[:, :, None].expand(b, kv, self.groups, s, d).reshape(b, h, s, d)
        scores = (q @ k.transpose(-1, -2)) * (d ** -0.5)
        if self.causal:
            # the lower triangle made here, not a buffer: the exporter's constant folding
            # would mix a CUDA parameter with its CPU constants
            tril = torch.ones(s, s, dtype=torch.bool, device=q.device).tril()
            scores = scores.masked_fill(~tril, float("-inf"))
        return torch.softmax(scores, dim=-1) @ v


# (B, H, S, D, causal, key / value heads)
ATTENTION_SHAPES = {"A1": (8, 12, 128, 64, False, 12), "A2": (1, 12, 1024, 64, True, 12),
                    "A3": (1, 32, 2048, 128, True, 4), "A4": (1, 32, 8192, 128, True, 32),
                    "A5": (4, 16, 4096, 128, False, 16)}


def bench_ms(fn):
    return triton.testing.do_bench(fn, warmup=50, rep=300, return_mode="median")


def copy_bandwidth(nbytes_moved=2 << 30):
    """GB/s of a device-to-device copy moving `nbytes_moved` bytes (read + written); the
    default, 1 GiB each way, is the device's ceiling."""
    n = max(nbytes_moved // 8, 1)  # float32 elements copied
    x = torch.empty(n, device=DEV).uniform_()
    y = torch.empty_like(x)
    ms = bench_ms(lambda: y.copy_(x))
    return 2 * n * 4 / (ms * 1e-3) / 1e9


def nbytes(t):
    return t.numel() * t.element_size()


def braze_bench(args, onnx_path, wdir, iters, precision=None):
    """`braze bench --tune` on the model (at --precision `precision` when given): its JSON
    report, or None and the error's tail."""
    cmd = [args.braze, "bench", onnx_path, "--tune", "--tuning-cache", os.path.join(args.out, "tuning.json"),
           "--json", os.path.join(wdir, "braze.json"), "--iters", str(iters)]
    if precision:
        cmd += ["--precision", precision]
    p = subprocess.run(cmd, capture_output=True, text=True)
    open(os.path.join(wdir, "braze_bench.txt"), "w").write(p.stdout + p.stderr)
    if p.returncode != 0:
        return None, (p.stdout + p.stderr)[-2000:]
    return json.load(open(os.path.join(wdir, "braze.json"))), ""


def selected(args, name):
    """--only takes names or shell patterns, comma-separated (W1,W3,G3-*)."""
    return not args.only or any(fnmatch.fnmatchcase(name, p) for p in args.only.split(","))


def run(args):
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(0)
    copy_gbs = copy_bandwidth()
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, copy bandwidth {copy_gbs:.0f} GB/s", flush=True)
    results = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "copy_gbs": copy_gbs,
               "date": time.strftime("%Y-%m-%d"), "workloads": {}}
    for name, (desc, model, specs, dtype) in workloads().items():
        if not selected(args, name):
            continue
        model = model.to(DEV).to(dtype).eval()
        inputs = [torch.randn(*shape, device=DEV, dtype=dt) for shape, dt in specs]
        wdir = os.path.join(args.out, name)
        os.makedirs(wdir, exist_ok=True)
        onnx_path = os.path.join(wdir, "model.onnx")
        with torch.no_grad():
            ref = model(*inputs)
            torch.onnx.export(model, tuple(inputs), onnx_path, opset_version=18, dynamo=False,
                              input_names=[f"in{i}" for i in range(len(inputs))], output_names=["out"])
        for i, t in enumerate(inputs):
            np.save(os.path.join(wdir, f"in{i}.npy"), t.cpu().numpy())
        moved = sum(nbytes(t) for t in inputs) + nbytes(ref)
        row = {"desc": desc, "bytes": moved}
        # braze: compile with tuning, time, check outputs.
        bj, err = braze_bench(args, onnx_path, wdir, 200)
        if bj is None:
            print(f"{name}: braze bench failed:\n{err}", flush=True)
            row["braze_error"] = err
        else:
            row["braze_ms"] = bj["latency_us"]["median"] / 1e3
            row["braze_kernels"] = len(bj["kernels"])
            row["braze_kernel_rows"] = [(k["name"], k["median_us"], k["gbs"], k["roofline_pct"]) for k in bj["kernels"]]
            run_cmd = [args.braze, "run", onnx_path, "--inputs"] + [os.path.join(wdir, f"in{i}.npy") for i in range(len(inputs))] + \
                      ["--outputs", os.path.join(wdir, "braze_out"), "--tuning-cache", os.path.join(args.out, "tuning.json"), "--tune"]
            q = subprocess.run(run_cmd, capture_output=True, text=True)
            if q.returncode == 0:
                got = np.load(os.path.join(wdir, "braze_out", "out.npy")).astype(np.float64)
                want = ref.float().cpu().numpy().astype(np.float64)
                tol = 2e-2 if dtype == torch.float16 else 1e-3
                err = float(np.max(np.abs(got - want) / (np.abs(want) + 1e-2)))
                row["max_rel_err"] = err
                row["agree"] = bool(np.allclose(got, want, rtol=tol, atol=tol))
                row["retime_lines"] = [l for l in q.stdout.splitlines() if l.startswith("tuning:")]
            else:
                row["agree"] = False
                row["run_error"] = (q.stdout + q.stderr)[-1500:]
        # PyTorch variants.
        with torch.no_grad():
            row["eager_ms"] = bench_ms(lambda: model(*inputs))
            torch._dynamo.reset()
            comp = torch.compile(model)
            comp(*inputs)
            row["compile_ms"] = bench_ms(lambda: comp(*inputs))
            if not args.no_max_autotune:
                torch._dynamo.reset()
                comp2 = torch.compile(model, mode="max-autotune")
                comp2(*inputs)
                row["max_autotune_ms"] = bench_ms(lambda: comp2(*inputs))
        for k in ("braze_ms", "eager_ms", "compile_ms", "max_autotune_ms"):
            if k in row:
                row[k.replace("_ms", "_gbs")] = moved / (row[k] * 1e-3) / 1e9
        # A copy moving the same bytes: the ceiling at this size, where launch and the tail
        # of one small grid matter (W6).
        row["copy_same_size_gbs"] = copy_bandwidth(moved)
        if "braze_ms" in row:
            row["braze_pct_copy_same_size"] = 100 * moved / (row["braze_ms"] * 1e-3) / 1e9 / row["copy_same_size_gbs"]
            best = min(row[k] for k in ("eager_ms", "compile_ms", "max_autotune_ms") if k in row)
            row["speedup_vs_best_torch"] = best / row["braze_ms"]
            row["braze_pct_copy"] = 100 * row["braze_gbs"] / copy_gbs
        results["workloads"][name] = row
        json.dump(results, open(os.path.join(args.out, "bench.json"), "w"), indent=1)
        print(f"{name} {desc}: " + ", ".join(f"{k}={v:.4g}" for k, v in row.items() if isinstance(v, float)), flush=True)
    if results["workloads"]:
        print_memory_table(results)
    run_gemm(args, results)
    run_attention(args, results)


def sdpa_backends(q, k, v, causal, groups):
    """Median ms of torch's scaled_dot_product_attention on each backend that takes the case
    (GQA through enable_gqa); a backend that refuses it is left out."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    f = torch.nn.functional.scaled_dot_product_attention
    out = {}
    for be in (SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION,
               SDPBackend.MATH):
        try:
            with sdpa_kernel(be):
                f(q, k, v, is_causal=causal, enable_gqa=groups > 1)
                out[be.name.lower()] = bench_ms(lambda: f(q, k, v, is_causal=causal, enable_gqa=groups > 1))
        except RuntimeError:
            pass
    return out


def run_attention(args, results):
    """Attention workloads (issue #17): braze's attention kernel (heuristic and tuned) against
    the fastest SDPA backend, and braze's output against SDPA in float32."""
    for name, (b, h, s, d, causal, kv) in ATTENTION_SHAPES.items():
        if not selected(args, name):
            continue
        groups = h // kv
        desc = f"attention B{b} H{h} S{s} D{d}" + (" causal" if causal else "") + (f" kv{kv}" if groups > 1 else "")
        torch.manual_seed(0)
        q = torch.randn(b, h, s, d, device=DEV, dtype=torch.float16)
        k = torch.randn(b, kv, s, d, device=DEV, dtype=torch.float16)
        v = torch.randn(b, kv, s, d, device=DEV, dtype=torch.float16)
        model = Attention(causal, groups).to(DEV).eval()
        wdir = os.path.join(args.out, name)
        os.makedirs(wdir, exist_ok=True)
        onnx_path = os.path.join(wdir, "model.onnx")
        flops = 4.0 * b * h * s * s * d * (0.5 if causal else 1.0)
        row = {"desc": desc, "flops": flops}
        with torch.no_grad():
            ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal,
                                                                   enable_gqa=groups > 1)
            try:
                torch.onnx.export(model, (q, k, v), onnx_path, opset_version=18, dynamo=False,
                                  input_names=["q", "k", "v"], output_names=["out"])
            except Exception as e:  # recorded; the other workloads still run
                row["export_error"] = repr(e)[-500:]
                print(f"{name}: export failed: {row['export_error']}", flush=True)
                results.setdefault("attention", {})[name] = row
                continue
        heur = subprocess.run([args.braze, "bench", onnx_path, "--json", os.path.join(wdir, "heuristic.json"),
                               "--iters", "100"], capture_output=True, text=True)
        if heur.returncode == 0:
            hj = json.load(open(os.path.join(wdir, "heuristic.json")))
            row["braze_heuristic_ms"] = hj["latency_us"]["median"] / 1e3
            row["braze_kernels"] = [k_["name"] for k_ in hj["kernels"]]
        bj, err = braze_bench(args, onnx_path, wdir, 100)
        if bj is None:
            row["braze_error"] = err
            print(f"{name}: braze bench failed:\n{err}", flush=True)
        else:
            row["braze_ms"] = bj["latency_us"]["median"] / 1e3
            for i, t in zip("qkv", (q, k, v)):
                np.save(os.path.join(wdir, f"{i}.npy"), t.cpu().numpy())
            r = subprocess.run([args.braze, "run", onnx_path, "--inputs"] + [os.path.join(wdir, f"{i}.npy") for i in "qkv"]
                               + ["--outputs", os.path.join(wdir, "braze_out"), "--tuning-cache",
                                  os.path.join(args.out, "tuning.json"), "--tune"], capture_output=True, text=True)
            if r.returncode == 0:
                got = torch.from_numpy(np.load(os.path.join(wdir, "braze_out", "out.npy"))).float().to(DEV)
                row["rel_l2"] = float((got - ref).norm() / ref.norm())
                row["rel_l2_ok"] = bool(row["rel_l2"] <= 1e-2)
            else:
                row["run_error"] = (r.stdout + r.stderr)[-1500:]
            for i in "qkv":
                os.remove(os.path.join(wdir, f"{i}.npy"))
        with torch.no_grad():
            row["sdpa_ms"] = sdpa_backends(q, k, v, causal, groups)
        for key in ("braze_ms", "braze_heuristic_ms"):
            if key in row:
                row[key.replace("_ms", "_tflops")] = flops / (row[key] * 1e-3) / 1e12
        if row["sdpa_ms"]:
            best = min(row["sdpa_ms"], key=row["sdpa_ms"].get)
            row["sdpa_best"], row["sdpa_best_ms"] = best, row["sdpa_ms"][best]
            row["sdpa_best_tflops"] = flops / (row["sdpa_best_ms"] * 1e-3) / 1e12
            if "braze_ms" in row:
                row["vs_sdpa"] = row["sdpa_best_ms"] / row["braze_ms"]
        results.setdefault("attention", {})[name] = row
        json.dump(results, open(os.path.join(args.out, "bench.json"), "w"), indent=1)
        print(f"{name} {desc}: " + ", ".join(f"{k_}={v_:.4g}" for k_, v_ in row.items() if isinstance(v_, float))
              + f" sdpa={row['sdpa_ms']}", flush=True)
    if results.get("attention"):
        print()
        print(f"{'workload':4} {'':40} {'braze TF/s':>10} {'heur TF/s':>9} {'SDPA TF/s':>9} {'backend':>10} "
              f"{'vs SDPA':>7} rel_l2")
        for name, r in results["attention"].items():
            def g(key):
                return f"{r[key]:.0f}" if key in r else "-"
            print(f"{name:4} {r['desc'][:40]:40} {g('braze_tflops'):>10} {g('braze_heuristic_tflops'):>9} "
                  f"{g('sdpa_best_tflops'):>9} {r.get('sdpa_best', '-'):>10} {r.get('vs_sdpa', 0):>6.2f}x "
                  f"{r.get('rel_l2', float('nan')):.2e}")


def print_memory_table(results):
    print()
    print(f"{'':4} {'workload':44} {'braze GB/s':>10} {'%copy':>6} {'%same':>6} {'eager':>7} {'compile':>8} {'max-aut':>8} {'vs best':>8} agree")
    for name, r in results["workloads"].items():
        def g(k):
            return f"{r[k]:.0f}" if k in r else "-"
        print(f"{name:4} {r['desc'][:44]:44} {g('braze_gbs'):>10} {r.get('braze_pct_copy', 0):>5.0f}% {r.get('braze_pct_copy_same_size', 0):>5.0f}% {g('eager_gbs'):>7} "
              f"{g('compile_gbs'):>8} {g('max_autotune_gbs'):>8} {r.get('speedup_vs_best_torch', 0):>7.2f}x {r.get('agree')}")


def run_gemm(args, results):
    """GEMM workloads (issue #6): braze's fused GEMM + epilogue against cuBLAS plain, cuBLAS
    plus PyTorch's separate epilogue, and torch.compile(max-autotune) with the epilogue. fp32
    stays fp32 on both sides; tf32 runs on tensor cores on both sides."""
    for name, (desc, model, specs, dtype, (m, n, k), precision, allow_tf32) in gemm_workloads().items():
        if not selected(args, name):
            continue
        torch.backends.cuda.matmul.allow_tf32 = allow_tf32
        model = model.to(DEV).to(dtype).eval()
        x = torch.randn(*specs[0][0], device=DEV, dtype=dtype)
        wdir = os.path.join(args.out, name)
        os.makedirs(wdir, exist_ok=True)
        onnx_path = os.path.join(wdir, "model.onnx")
        with torch.no_grad():
            torch.onnx.export(model, (x,), onnx_path, opset_version=18, dynamo=False, input_names=["in0"],
                              output_names=["out"])
            ref = torch.nn.functional.linear(x.double(), model.w.double(),
                                             None if model.b is None else model.b.double())
            if model.b is not None:
                ref = torch.nn.functional.gelu(ref)
        flops = 2.0 * m * n * k
        row = {"desc": desc, "flops": flops}
        bj, err = braze_bench(args, onnx_path, wdir, 100, precision)
        if bj is None:
            row["braze_error"] = err
            print(f"{name}: braze bench failed:\n{err}", flush=True)
        else:
            row["braze_ms"] = bj["latency_us"]["median"] / 1e3
            row["braze_kernels"] = len(bj["kernels"])
        if "braze_ms" in row:
            # numpy has no bfloat16: braze reads a bfloat16 input from float32 holding its
            # values exactly, and writes bfloat16 outputs the same way
            np.save(os.path.join(wdir, "in0.npy"), (x.float() if dtype == torch.bfloat16 else x).cpu().numpy())
            q = subprocess.run([args.braze, "run", onnx_path, "--inputs", os.path.join(wdir, "in0.npy"), "--outputs",
                                os.path.join(wdir, "braze_out"), "--tuning-cache", os.path.join(args.out, "tuning.json"),
                                "--tune"] + (["--precision", precision] if precision else []),
                               capture_output=True, text=True)
            if q.returncode == 0:
                got = torch.from_numpy(np.load(os.path.join(wdir, "braze_out", "out.npy"))).double().to(DEV)
                row["rel_l2"] = float((got - ref).norm() / ref.norm())
                row["nan"] = bool(torch.isnan(got).any())
                # float32 and tf32 within 1e-3 of float64, float16 and bfloat16 within 1e-2
                bound = 1e-2 if dtype in (torch.float16, torch.bfloat16) else 1e-3
                row["rel_l2_ok"] = bool(row["rel_l2"] <= bound and not row["nan"])
            else:
                row["run_error"] = (q.stdout + q.stderr)[-1500:]
        with torch.no_grad():
            w = model.w
            row["cublas_plain_ms"] = bench_ms(lambda: torch.nn.functional.linear(x, w))
            row["cublas_epilogue_ms"] = bench_ms(lambda: model(x))  # addmm, then a separate GELU
            if not args.no_max_autotune:
                torch._dynamo.reset()
                comp = torch.compile(model, mode="max-autotune")
                comp(x)
                row["max_autotune_ms"] = bench_ms(lambda: comp(x))
        for key in ("braze_ms", "cublas_plain_ms", "cublas_epilogue_ms", "max_autotune_ms"):
            if key in row:
                row[key.replace("_ms", "_tflops")] = flops / (row[key] * 1e-3) / 1e12
        if "braze_ms" in row:
            row["vs_cublas_plain"] = row["cublas_plain_ms"] / row["braze_ms"]
            row["vs_cublas_epilogue"] = row["cublas_epilogue_ms"] / row["braze_ms"]
        results.setdefault("gemm", {})[name] = row
        json.dump(results, open(os.path.join(args.out, "bench.json"), "w"), indent=1)
        for f in ("in0.npy",):
            if os.path.exists(os.path.join(wdir, f)):
                os.remove(os.path.join(wdir, f))
        print(f"{name} {desc}: " + ", ".join(f"{k}={v:.4g}" for k, v in row.items() if isinstance(v, float)), flush=True)
    if results.get("gemm"):
        print()
        print(f"{'workload':16} {'braze TF/s':>10} {'cuBLAS':>8} {'cuBLAS+ep':>10} {'max-aut':>8} "
              f"{'vs cuBLAS':>9} {'vs +ep':>7} rel_l2   ok")
        for name, r in results["gemm"].items():
            def g(key):
                return f"{r[key]:.0f}" if key in r else "-"
            print(f"{name:16} {g('braze_tflops'):>10} {g('cublas_plain_tflops'):>8} {g('cublas_epilogue_tflops'):>10} "
                  f"{g('max_autotune_tflops'):>8} {r.get('vs_cublas_plain', 0):>8.2f}x {r.get('vs_cublas_epilogue', 0):>6.2f}x "
                  f"{r.get('rel_l2', float('nan')):.2e} {r.get('rel_l2_ok', '-')}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--braze", default="build-gpu/cli/braze")
    ap.add_argument("--out", default=os.environ.get("OUT", "bench-out"))
    ap.add_argument("--only", default="")
    ap.add_argument("--no-max-autotune", action="store_true")
    run(ap.parse_args())
