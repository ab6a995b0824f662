#!/usr/bin/env python3
"""Whole real models, braze against PyTorch, on the GPU machine, in one run (issue #16).

For each row: build the model in PyTorch with seeded random weights (transformers'
configurations, attn_implementation="sdpa"; torchvision), export it with
torch.onnx.export(dynamo=True) in float32 (weights as external data), then

  - `braze compile` cold (an empty kernel cache) and warm (the same cache), wall-clock timed,
    with the split braze reports (NVRTC against the rest);
  - `braze bench` of that engine (heuristic schedules) and of the model with `--tune`;
  - `braze run` on the same inputs, its outputs against PyTorch float32 (relative L2);
  - PyTorch eager, torch.compile and torch.compile(mode="reduce-overhead") (CUDA graphs) at
    the row's precision (the model cast to float16 for fp16 rows; float32 with PyTorch's
    defaults, cuDNN's convolutions in TF32, for tf32 rows), convolution nets channels_last,
    timed with triton.testing.do_bench (median, L2 flushed before each run, as braze bench does);
  - for every GEMM kernel of braze's plan, torch.matmul on the same (batch, M, N, K, dtype),
    and the ratio braze kernel / torch.matmul.

Prints one table per row and a summary; writes models.json and models.md under --out.

  python3 bench/models.py --braze build-gpu/cli/braze --out OUTDIR [--only bert-b1,gpt2-*]
                          [--no-tune] [--no-compile-default] [--export-only] [--small]
                          [--no-torch] [--base OTHER_BRAZE]

--small exports each row at its model's smallest shape (batch 1, 32 tokens or 64x64 images) for
scripts/gpu_check.sh, which runs compute-sanitizer over them.

--base times another braze build (an older commit's) on the same exports, alternated with this
one, for a before / after ratio measured in one run; --no-torch skips PyTorch's timings.

Exporting and torch.compile take minutes: pick rows with --only (names or shell patterns).
"""
import argparse
import fnmatch
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import torch

DEV = "cuda" if torch.cuda.is_available() else "cpu"

# name: (model, batch, sequence length or image size, braze --precision)
ROWS = {
    "bert-b1-s128-fp32": ("bert", 1, 128, "fp32"),
    "bert-b8-s128-fp16": ("bert", 8, 128, "fp16"),
    "bert-b32-s128-fp16": ("bert", 32, 128, "fp16"),
    "gpt2-b1-s1024-fp16": ("gpt2", 1, 1024, "fp16"),
    "gpt2-b8-s512-fp16": ("gpt2", 8, 512, "fp16"),
    "llama4-b1-s512-fp16": ("llama4", 1, 512, "fp16"),
    "llama4-b1-s2048-fp16": ("llama4", 1, 2048, "fp16"),
    "resnet50-b1-fp16": ("resnet50", 1, 224, "fp16"),
    "resnet50-b32-fp16": ("resnet50", 32, 224, "fp16"),
    "mobilenetv2-b32-fp16": ("mobilenetv2", 32, 224, "fp16"),
    "resnet50-b32-tf32": ("resnet50", 32, 224, "tf32"),
}
CNNS = ("resnet50", "mobilenetv2")

# tf32 rows: PyTorch in float32 with its defaults (cuDNN's convolutions in TF32, matmuls not).
TORCH_DTYPE = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16,
               "bf16": torch.bfloat16}


def randomise(model):
    """Fresh initialisation leaves norms' weights at 1, biases and batch-norm statistics at 0:
    the exporter's optimiser would then merge equal weights and drop zero biases, and the
    graph would not be the one a trained model exports. Draws every one-dimensional
    parameter (norm weights in [0.5, 1.5), biases in [-0.1, 0.1)) and batch-norm statistics."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1:
                if name.endswith("bias"):
                    p.uniform_(-0.1, 0.1)
                else:
                    p.uniform_(0.5, 1.5)
        for name, b in model.named_buffers():
            if name.endswith("running_mean"):
                b.uniform_(-0.1, 0.1)
            elif name.endswith("running_var"):
                b.uniform_(0.5, 1.5)
    return model


def build_model(kind):
    """The model in float32 with seeded random weights, and what its forward takes."""
    torch.manual_seed(0)
    model, names, vocab = build_module(kind)
    return randomise(model), names, vocab


def build_module(kind):
    if kind == "bert":
        from transformers import BertConfig, BertModel
        cfg = BertConfig(attn_implementation="sdpa")  # BERT-base: 12 layers, 768 wide, 12 heads
        return BertModel(cfg).eval(), ("input_ids", "attention_mask"), cfg.vocab_size
    if kind == "gpt2":
        from transformers import GPT2Config, GPT2Model
        cfg = GPT2Config(attn_implementation="sdpa")  # GPT-2 small: 12 layers, 768 wide
        return GPT2Model(cfg).eval(), ("input_ids",), cfg.vocab_size
    if kind == "llama4":
        from transformers import LlamaConfig, LlamaModel
        cfg = LlamaConfig(hidden_size=2048, intermediate_size=5632, num_attention_heads=32,
                          num_key_value_heads=4, num_hidden_layers=4, vocab_size=32000,
                          max_position_embeddings=4096, attn_implementation="sdpa")
        return LlamaModel(cfg).eval(), ("input_ids",), cfg.vocab_size
    import torchvision
    if kind == "resnet50":
        return torchvision.models.resnet50(weights=None).eval(), ("pixels",), 0
    if kind == "mobilenetv2":
        return torchvision.models.mobilenet_v2(weights=None).eval(), ("pixels",), 0
    raise ValueError(kind)


class FirstOutput(torch.nn.Module):
    """The model's first output as a plain tensor (last_hidden_state, or the logits)."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, *args):
        out = self.m(*args)
        if isinstance(out, torch.Tensor):
            return out
        return out[0]


def make_inputs(kind, names, vocab, batch, size):
    """Seeded inputs: token ids over the whole vocabulary, BERT's mask with the last eighth of
    every sequence but the first padded, or an image batch."""
    g = torch.Generator().manual_seed(1234)
    if kind in ("resnet50", "mobilenetv2"):
        return [torch.randn(batch, 3, size, size, generator=g)]
    ids = torch.randint(0, vocab, (batch, size), generator=g, dtype=torch.int64)
    if "attention_mask" not in names:
        return [ids]
    mask = torch.ones(batch, size, dtype=torch.int64)
    mask[1:, size - size // 8:] = 0
    return [ids, mask]


def export(model, inputs, names, path):
    with torch.no_grad():
        torch.onnx.export(model, tuple(inputs), path, dynamo=True, external_data=True,
                          input_names=list(names), output_names=["out"], optimize=True)


def timed(cmd, env=None):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    return p, time.perf_counter() - t0


def bench_ms(fn, warmup=100, rep=500):
    import triton.testing
    return triton.testing.do_bench(fn, warmup=warmup, rep=rep, return_mode="median")


def rel_l2(got, want):
    got = got.astype(np.float64).ravel()
    want = want.astype(np.float64).ravel()
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))


def braze_row(args, row_dir, onnx_path, input_files, precision, cache_dir):
    """compile (cold, warm), bench (heuristics; tuned), run + outputs."""
    r = {}
    env = dict(os.environ, XDG_CACHE_HOME=cache_dir)
    shutil.rmtree(cache_dir, ignore_errors=True)
    engine = os.path.join(row_dir, "model.braze")
    compile_cmd = [args.braze, "compile", onnx_path, "-o", engine, "--precision", precision]
    for which in ("cold", "warm"):
        p, secs = timed(compile_cmd, env)
        open(os.path.join(row_dir, f"compile_{which}.txt"), "w").write(p.stdout + p.stderr)
        if p.returncode != 0:
            r["error"] = f"compile: {(p.stdout + p.stderr)[-1500:]}"
            return r
        r[f"compile_{which}_s"] = secs
        for line in p.stdout.splitlines():
            if line.startswith("time:"):
                r[f"compile_{which}_report"] = line
    inspect = subprocess.run([args.braze, "inspect", onnx_path, "--json", "--precision", precision],
                             capture_output=True, text=True, env=env)
    if inspect.returncode == 0:
        plan = json.loads(inspect.stdout)
        r["kernels"] = len(plan.get("kernels", []))
        r["schedules"] = {}
        for k in plan.get("kernels", []):
            if k.get("kind") == "gemm":
                r["schedules"][k.get("schedule", "?")] = r["schedules"].get(k.get("schedule", "?"), 0) + 1
    for which, cmd in (("heuristic", [args.braze, "bench", engine]),
                       ("tuned", [args.braze, "bench", onnx_path, "--tune", "--precision", precision,
                                  "--tuning-cache", os.path.join(args.out, "tuning.json")])):
        if which == "tuned" and args.no_tune:
            continue
        js = os.path.join(row_dir, f"bench_{which}.json")
        p, _ = timed(cmd + ["--inputs"] + input_files + ["--json", js, "--iters", "100"], env)
        open(os.path.join(row_dir, f"bench_{which}.txt"), "w").write(p.stdout + p.stderr)
        if p.returncode != 0:
            r[f"{which}_error"] = (p.stdout + p.stderr)[-1500:]
            continue
        r[which] = json.load(open(js))
        r[f"{which}_ms"] = r[which]["latency_us"]["median"] / 1e3
    if args.base and "heuristic_ms" in r:
        r.update(base_row(args, row_dir, onnx_path, input_files, precision, engine, env))
    out_dir = os.path.join(row_dir, "braze_out")
    p = subprocess.run([args.braze, "run", engine, "--inputs"] + input_files + ["--outputs", out_dir],
                       capture_output=True, text=True, env=env)
    if p.returncode != 0:
        r["run_error"] = (p.stdout + p.stderr)[-1500:]
    else:
        r["out_file"] = os.path.join(out_dir, "out.npy")
    return r


def base_row(args, row_dir, onnx_path, input_files, precision, engine, env):
    """--base: the same export compiled by another braze build (its own kernel cache), then
    both engines' `braze bench` alternated twice more; each side's best median. The ratio
    braze / base is this run's measure of a change (below 1: this build is faster)."""
    r = {}
    base_env = dict(env, XDG_CACHE_HOME=os.path.join(row_dir, "cache_base"))
    shutil.rmtree(base_env["XDG_CACHE_HOME"], ignore_errors=True)
    base_engine = os.path.join(row_dir, "model_base.braze")
    p = subprocess.run([args.base, "compile", onnx_path, "-o", base_engine, "--precision", precision],
                       capture_output=True, text=True, env=base_env)
    if p.returncode != 0:
        r["base_error"] = f"compile: {(p.stdout + p.stderr)[-1500:]}"
        return r
    medians = {"head": [], "base": []}
    for i in range(2):
        for side, exe, eng, e in (("base", args.base, base_engine, base_env), ("head", args.braze, engine, env)):
            js = os.path.join(row_dir, f"bench_{side}_{i}.json")
            p = subprocess.run([exe, "bench", eng, "--inputs"] + input_files + ["--json", js, "--iters", "100"],
                               capture_output=True, text=True, env=e)
            if p.returncode != 0:
                r["base_error"] = f"bench ({side}): {(p.stdout + p.stderr)[-1500:]}"
                return r
            medians[side].append(json.load(open(js))["latency_us"]["median"] / 1e3)
    r["base_ms"] = min(medians["base"])
    r["paired_ms"] = min(medians["head"])
    r["vs_base"] = r["paired_ms"] / r["base_ms"]
    return r


def torch_row(args, model, inputs, precision, channels_last=False):
    """PyTorch eager, torch.compile and torch.compile(mode="reduce-overhead") on the row's
    inputs; convolution nets with channels_last weights and inputs (cuDNN's fastest layout)."""
    dt = TORCH_DTYPE[precision]
    m = model.to(DEV).to(dt)
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    m = m.to(memory_format=fmt)
    xs = [x.to(DEV) if x.is_floating_point() is False else
          x.to(DEV).to(dt).contiguous(memory_format=fmt if x.dim() == 4 else torch.contiguous_format)
          for x in inputs]
    r = {}
    with torch.no_grad():
        r["eager_ms"] = bench_ms(lambda: m(*xs))
        modes = [("compile_ms", None), ("reduce_overhead_ms", "reduce-overhead")]
        if args.no_compile_default:
            modes = modes[1:]
        for key, mode in modes:
            torch._dynamo.reset()
            c = torch.compile(m, mode=mode) if mode else torch.compile(m)
            for _ in range(3):
                c(*xs)
            r[key] = bench_ms(lambda: c(*xs))
    torch._dynamo.reset()
    return r


def gemm_rows(bench_json):
    """Each GEMM kernel of a braze bench report, with torch.matmul on its product (timed once
    per distinct product: a model's layers repeat them)."""
    rows, timed = [], {}
    for k in bench_json.get("kernels", []):
        gm = k.get("gemm")
        if not gm:
            continue
        dt = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}.get(gm["dtype"])
        if dt is None:
            continue
        b, m, n, kk = gm["batch"], gm["m"], gm["n"], gm["k"]
        key = (b, m, n, kk, gm["dtype"])
        if key not in timed:
            a = torch.randn(b, m, kk, device=DEV, dtype=dt)
            w = torch.randn(b, kk, n, device=DEV, dtype=dt) if b > 1 else torch.randn(kk, n, device=DEV, dtype=dt)
            x = a if b > 1 else a[0]
            timed[key] = bench_ms(lambda: torch.matmul(x, w), warmup=25, rep=100) * 1e3
        t = timed[key]
        rows.append({"name": k["name"], "nodes": k.get("nodes", [])[:3], "schedule": gm.get("schedule", "?"),
                     "batch": b, "m": m, "n": n, "k": kk, "dtype": gm["dtype"], "braze_us": k["median_us"],
                     "torch_us": t, "ratio": k["median_us"] / t})
    return rows


def attention_rows(bench_json):
    """Each attention kernel of a braze bench report, with PyTorch's
    scaled_dot_product_attention on the same shape (batch x heads as the heads of one batch; a
    causal mask as is_causal, an additive one as a float mask of zeros broadcast over the
    heads), timed once per distinct shape."""
    rows, timed = [], {}
    for k in bench_json.get("kernels", []):
        at = k.get("attention")
        if not at:
            continue
        dt = {"float16": torch.float16, "bfloat16": torch.bfloat16}.get(at["dtype"])
        if dt is None:
            continue
        b, sq, sk, d, mask = at["batch"], at["sq"], at["sk"], at["d"], at["mask"]
        key = (b, sq, sk, d, at["dtype"], mask)
        if key not in timed:
            q = torch.randn(1, b, sq, d, device=DEV, dtype=dt)
            kk = torch.randn(1, b, sk, d, device=DEV, dtype=dt)
            v = torch.randn(1, b, sk, d, device=DEV, dtype=dt)
            m = torch.zeros(1, 1, sq, sk, device=DEV, dtype=dt) if mask == "additive" else None
            sdpa = torch.nn.functional.scaled_dot_product_attention
            timed[key] = bench_ms(lambda: sdpa(q, kk, v, attn_mask=m, is_causal=mask == "causal"),
                                  warmup=25, rep=100) * 1e3
        t = timed[key]
        rows.append({"name": k["name"], "batch": b, "sq": sq, "sk": sk, "d": d, "dtype": at["dtype"],
                     "mask": mask, "braze_us": k["median_us"], "torch_us": t, "ratio": k["median_us"] / t})
    return rows


def smallest_shape(kind):
    """(batch, size) of a model's smallest row shape: one sequence of 32 tokens, or one 64x64
    image (ResNet-50's last stage still 2x2)."""
    return (1, 64) if kind in ("resnet50", "mobilenetv2") else (1, 32)


def run_row(args, name, results):
    t_row = time.perf_counter()
    kind, batch, size, precision = ROWS[name]
    if args.small:
        batch, size = smallest_shape(kind)
    row_dir = os.path.join(args.out, name)
    os.makedirs(row_dir, exist_ok=True)
    model, names, vocab = build_model(kind)
    model = FirstOutput(model)
    inputs = make_inputs(kind, names, vocab, batch, size)
    onnx_path = os.path.join(row_dir, "model.onnx")
    t0 = time.perf_counter()
    if not os.path.exists(onnx_path):
        export(model, inputs, names, onnx_path)
    row = {"model": kind, "batch": batch, "size": size, "precision": precision,
           "export_s": time.perf_counter() - t0}
    input_files = []
    for n, x in zip(names, inputs):
        f = os.path.join(row_dir, f"{n}.npy")
        np.save(f, x.numpy())
        input_files.append(f)
    if args.export_only:
        results["rows"][name] = row
        return
    # The reference: PyTorch in float32 without TF32 (cuDNN's convolutions default to it).
    torch.backends.cudnn.allow_tf32 = False
    with torch.no_grad():
        want = model.to(DEV)(*[x.to(DEV) for x in inputs]).float().cpu().numpy()
    torch.backends.cudnn.allow_tf32 = True
    row.update(braze_row(args, row_dir, onnx_path, input_files, precision, os.path.join(row_dir, "cache")))
    if "out_file" in row:
        row["rel_l2"] = rel_l2(np.load(row["out_file"]), want)
    if DEV == "cuda" and not args.no_torch:
        row.update(torch_row(args, model, inputs, precision, channels_last=kind in CNNS))
        best = row.get("tuned_ms", row.get("heuristic_ms"))
        if best:
            row["vs_reduce_overhead"] = row["reduce_overhead_ms"] / best
            row["vs_eager"] = row["eager_ms"] / best
        if "heuristic" in row:
            row["gemms"] = gemm_rows(row.get("tuned", row["heuristic"]))
            try:
                row["attention"] = attention_rows(row.get("tuned", row["heuristic"]))
            except Exception as e:  # the comparison is a side table: keep the row
                row["attention_error"] = f"{type(e).__name__}: {e}"
    for k in ("heuristic", "tuned"):
        if k in row:
            row[k] = {"latency_us": row[k]["latency_us"], "kernels": [
                {x: kk.get(x) for x in ("name", "kind", "median_us", "tflops", "roofline_pct", "gemm", "attention")}
                for kk in row[k]["kernels"]]}
    row["row_s"] = time.perf_counter() - t_row
    results["rows"][name] = row
    print_row(name, row)


def fmt_ms(v):
    return "-" if v is None else f"{v:.3f}"


def print_row(name, r):
    print(f"\n== {name} ({r.get('row_s', 0):.0f} s): export {r.get('export_s', 0):.0f} s, compile cold {r.get('compile_cold_s', 0):.2f} s, "
          f"warm {r.get('compile_warm_s', 0):.2f} s, kernels {r.get('kernels', '-')}, GEMM schedules "
          f"{r.get('schedules', {})}, rel L2 {r.get('rel_l2', float('nan')):.2e}", flush=True)
    if "vs_base" in r:
        print(f"   paired with --base: braze {r['paired_ms']:.3f} ms, base {r['base_ms']:.3f} ms, "
              f"braze / base {r['vs_base']:.3f}", flush=True)
    for k in ("error", "heuristic_error", "tuned_error", "run_error", "attention_error", "base_error"):
        if k in r:
            print(f"   {k}: {r[k]}")
    print(f"   braze heuristic {fmt_ms(r.get('heuristic_ms'))} ms, tuned {fmt_ms(r.get('tuned_ms'))} ms; "
          f"torch eager {fmt_ms(r.get('eager_ms'))}, compile {fmt_ms(r.get('compile_ms'))}, "
          f"reduce-overhead {fmt_ms(r.get('reduce_overhead_ms'))} ms; reduce-overhead / braze "
          f"{r.get('vs_reduce_overhead', 0):.2f}x", flush=True)
    seen = {}
    for g in r.get("gemms", []):  # one line per distinct kernel: its worst instance
        if g["name"] not in seen or g["ratio"] > seen[g["name"]]["ratio"]:
            seen[g["name"]] = dict(g, count=seen.get(g["name"], {}).get("count", 0) + 1)
        else:
            seen[g["name"]]["count"] += 1
    for g in seen.values():
        print(f"   {g['schedule']:6} b{g['batch']:<4} {g['m']:>6}x{g['n']:<6}x{g['k']:<6} {g['dtype']:8} "
              f"braze {g['braze_us']:8.1f} us  torch.matmul {g['torch_us']:8.1f} us  {g['ratio']:5.2f}x  "
              f"x{g['count']:<3} {g['name'][:44]}")
    seen = {}
    for a in r.get("attention", []):  # one line per distinct kernel: its worst instance
        prev = seen.get(a["name"])
        seen[a["name"]] = dict(max(a, prev or a, key=lambda x: x["ratio"]), count=(prev or {}).get("count", 0) + 1)
    for a in seen.values():
        print(f"   flash  b{a['batch']:<4} {a['sq']:>6}x{a['sk']:<6} d{a['d']:<4} {a['mask']:8} {a['dtype']:8} "
              f"braze {a['braze_us']:8.1f} us  sdpa {a['torch_us']:8.1f} us  {a['ratio']:5.2f}x  x{a['count']:<3}")


def write_markdown(results, path):
    lines = [f"Measured {results['date']} on {results['device']}, torch {results['torch']}, {results['braze']}.",
             "", "| row | braze heuristic | braze tuned | eager | torch.compile | reduce-overhead | reduce-overhead ÷ braze (speed-up) | rel L2 | compile cold / warm | GEMM schedules | worst GEMM ÷ torch.matmul | worst attention ÷ SDPA |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, r in results["rows"].items():
        worst = max((g["ratio"] for g in r.get("gemms", [])), default=None)
        worst_att = max((a["ratio"] for a in r.get("attention", [])), default=None)
        speedup = f"{r['vs_reduce_overhead']:.2f}x" if "vs_reduce_overhead" in r else "-"
        lines.append(f"| {name} | {fmt_ms(r.get('heuristic_ms'))} | {fmt_ms(r.get('tuned_ms'))} | {fmt_ms(r.get('eager_ms'))} | "
                     f"{fmt_ms(r.get('compile_ms'))} | {fmt_ms(r.get('reduce_overhead_ms'))} | "
                     f"{speedup} | {r.get('rel_l2', float('nan')):.1e} | "
                     f"{r.get('compile_cold_s', 0):.2f} / {r.get('compile_warm_s', 0):.2f} s | "
                     f"{', '.join(f'{k} {v}' for k, v in r.get('schedules', {}).items())} | "
                     f"{'-' if worst is None else f'{worst:.2f}x'} | "
                     f"{'-' if worst_att is None else f'{worst_att:.2f}x'} |")
    if results.get("base"):
        lines += ["", f"Paired with --base ({results['base']}): each engine's best median of its bench runs, alternated.",
                  "", "| row | braze | base | braze ÷ base |", "| --- | --- | --- | --- |"]
        for name, r in results["rows"].items():
            lines.append(f"| {name} | {fmt_ms(r.get('paired_ms'))} | {fmt_ms(r.get('base_ms'))} | "
                         f"{r['vs_base']:.3f} |" if "vs_base" in r else f"| {name} | - | - | {r.get('base_error', '-')[:80]} |")
    open(path, "w").write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--braze", default="build-gpu/cli/braze")
    ap.add_argument("--out", default=os.environ.get("OUT", "models-out"))
    ap.add_argument("--only", default="", help="rows by name or shell pattern, comma-separated")
    ap.add_argument("--no-tune", action="store_true", help="skip braze bench --tune")
    ap.add_argument("--no-compile-default", action="store_true",
                    help="time torch.compile only with mode=reduce-overhead")
    ap.add_argument("--no-torch", action="store_true",
                    help="no PyTorch timings (eager, torch.compile, torch.matmul, SDPA); the "
                         "float32 reference output is still computed")
    ap.add_argument("--base", default="", metavar="BRAZE",
                    help="another braze build timed on the same exports, alternated with this one")
    ap.add_argument("--export-only", action="store_true", help="export the models and write the inputs")
    ap.add_argument("--small", action="store_true", help="each row at its model's smallest shape (gpu_check.sh)")
    args = ap.parse_args()
    args.braze = os.path.abspath(args.braze)
    base_ver = ""
    if args.base:
        args.base = os.path.abspath(args.base)
        base_ver = subprocess.run([args.base, "--version"], capture_output=True, text=True).stdout.strip()
    os.makedirs(args.out, exist_ok=True)
    ver = subprocess.run([args.braze, "--version"], capture_output=True, text=True).stdout.strip()
    results = {"date": time.strftime("%Y-%m-%d"), "device": torch.cuda.get_device_name() if DEV == "cuda" else "cpu",
               "torch": torch.__version__, "braze": ver, "base": base_ver, "rows": {}}
    picked = [n for n in ROWS if not args.only or any(fnmatch.fnmatchcase(n, p) for p in args.only.split(","))]
    if not picked:
        sys.exit(f"--only {args.only}: no row matches (rows: {', '.join(ROWS)})")
    for name in picked:
        try:
            run_row(args, name, results)
        except Exception as e:  # one row's failure is reported, the others still run
            results["rows"][name] = {"error": f"{type(e).__name__}: {e}"}
            print(f"\n== {name}: failed: {type(e).__name__}: {e}", flush=True)
        json.dump(results, open(os.path.join(args.out, "models.json"), "w"), indent=1)
        write_markdown(results, os.path.join(args.out, "models.md"))
    write_markdown(results, os.path.join(args.out, "models.md"))
    print()
    print(open(os.path.join(args.out, "models.md")).read())


if __name__ == "__main__":
    main()
