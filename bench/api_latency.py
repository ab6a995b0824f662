#!/usr/bin/env python3
"""The Python API's device path against `braze bench` (issue #18), on the GPU machine.

For each case, one engine file is compiled by `braze compile`, timed end to end by
`braze bench --warm-l2` (one CUDA-graph launch between two events, median), and run from
Python by `braze.Session.run` on PyTorch CUDA tensors (DLPack, read and written in place):

  run                  events on the current stream around Session.run(feeds, outputs=…), each
                       run waited for (the protocol of braze bench, with Python's overhead in it):
                       on PyTorch's default (legacy) stream, and on a stream of its own
  host time in run     the host's time inside that call
  run, outputs new     the same, braze allocating the outputs (torch.empty)
  run + synchronize    host wall clock of Session.run(…, outputs=…) and a stream synchronize
  events around nothing  the events of `run` around no call: what the protocol itself costs
  back to back         200 runs between two events, divided by 200 (the host ahead of the GPU)
  numpy run            host wall clock of Session.run on numpy arrays (copies both ways)

and torch.profiler (CUPTI) counts the memory copies of 20 device runs (none expected) and the
engine's kernels it saw in them (20 × kernels, else the profiler missed the runs), and
checks the device outputs against the numpy run's, byte for byte.

  python3 bench/api_latency.py --braze build-gpu/cli/braze --out $OUT/api \\
      [--bert-dir DIR]   # a bench/models.py --export-only row folder (bert-b8-s128-fp16)
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import onnx
import torch
from onnx import numpy_helper

import braze

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def cases(args):
    tiny = os.path.join(ROOT, "models", "bert_tiny_legacy")
    pbs = sorted(glob.glob(os.path.join(tiny, "test_data_set_0", "input_*.pb")))
    out = [{"name": "bert_tiny_legacy b2 s16 fp32", "onnx": os.path.join(tiny, "model.onnx"), "precision": "fp32",
            "shapes": "input_0:2x16,input_1:2x16",
            "inputs": [numpy_helper.to_array(onnx.load_tensor(f)) for f in pbs]}]
    if args.bert_dir:
        files = sorted(glob.glob(os.path.join(args.bert_dir, "*.npy")))
        names = [i.name for i in onnx.load(os.path.join(args.bert_dir, "model.onnx"),
                                           load_external_data=False).graph.input]
        by_name = {os.path.basename(f)[:-4]: f for f in files}
        out.append({"name": "BERT-base b8 s128 fp16", "onnx": os.path.join(args.bert_dir, "model.onnx"),
                    "precision": "fp16", "shapes": None, "inputs": [np.load(by_name[n]) for n in names]})
    return out


def median_event_us(fn, warmup, iters):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    us = []
    for _ in range(iters):
        e0.record()
        fn()
        e1.record()
        e1.synchronize()
        us.append(e0.elapsed_time(e1) * 1e3)
    return statistics.median(us)


def median_wall_us(fn, warmup, iters):
    for _ in range(warmup):
        fn()
    us = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        us.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(us)


def back_to_back_us(fn, warmup, n):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    for _ in range(n):
        fn()
    e1.record()
    e1.synchronize()
    return e0.elapsed_time(e1) * 1e3 / n


def copies_in(fn, runs):
    """Memory-copy activities (CUPTI) while `fn` runs `runs` times: {kind: count}."""
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(runs):
            fn()
        torch.cuda.synchronize()
    counts = {}
    for ev in prof.events():
        if "memcpy" in ev.name.lower():
            counts[ev.name] = counts.get(ev.name, 0) + 1
        elif ev.name.startswith("braze_"):  # the engine's kernels: the profiler saw the runs
            counts["braze kernels"] = counts.get("braze kernels", 0) + 1
    return counts


def profiled_copies(fn):
    try:
        return copies_in(fn, 20)
    except Exception as e:  # noqa: BLE001 — CUPTI may be unavailable; the figure is then missing
        return {"profiler failed": f"{type(e).__name__}: {e}"}


def run_case(args, case):
    slug = case["name"].split()[0].replace("-", "_").lower() + "_" + case["precision"]
    engine_path = os.path.join(args.out, slug + ".braze")
    cmd = [args.braze, "compile", case["onnx"], "-o", engine_path, "--precision", case["precision"]]
    if case["shapes"]:
        cmd += ["--shapes", case["shapes"]]
    subprocess.run(cmd, check=True, capture_output=True)
    eng = braze.load(engine_path)
    files = []
    for n, x in zip(eng.input_names, case["inputs"]):
        files.append(os.path.join(args.out, f"{slug}_{n}.npy"))
        np.save(files[-1], x)
    js = os.path.join(args.out, slug + "_bench.json")
    subprocess.run([args.braze, "bench", engine_path, "--inputs", *files, "--warm-l2", "--iters", str(args.iters),
                    "--json", js], check=True, capture_output=True)
    bench_us = json.load(open(js))["latency_us"]["median"]

    s = braze.Session(eng, "gpu")
    host = dict(zip(eng.input_names, case["inputs"]))
    want = s.run(host)
    feeds = {k: torch.from_numpy(np.array(v)).cuda() for k, v in host.items()}
    outs = s.run(feeds)
    s.synchronize()
    exact = all(np.array_equal(outs[k].cpu().numpy(), w) for k, w in want.items())
    stream = torch.cuda.current_stream().cuda_stream

    def given():
        s.run(feeds, outputs=outs, stream=stream)

    def given_sync():
        s.run(feeds, outputs=outs, stream=stream)
        torch.cuda.current_stream().synchronize()

    def call_us():  # the host's time in Session.run, its work then waited for
        t0 = time.perf_counter()
        given()
        t1 = time.perf_counter()
        torch.cuda.current_stream().synchronize()
        return (t1 - t0) * 1e6

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # events, runs and the default stream= on a stream of its own
        side_us = median_event_us(lambda: s.run(feeds, outputs=outs), args.warmup, args.iters)
    side.synchronize()
    hop = torch.cuda.Stream()
    hop_raw = hop.cuda_stream

    def hopped():  # events on the default stream, the run on another, ordered by two waits
        hop.wait_stream(torch.cuda.current_stream())
        s.run(feeds, outputs=outs, stream=hop_raw)
        torch.cuda.current_stream().wait_stream(hop)

    r = {"case": case["name"], "kernels": eng.kernels, "bench_warm_l2_us": bench_us, "exact": exact,
         "run_side_stream_us": side_us,
         "run_hopped_us": median_event_us(hopped, args.warmup, args.iters),
         "host_call_us": statistics.median([call_us() for _ in range(args.iters)]),
         "run_outputs_given_us": median_event_us(given, args.warmup, args.iters),
         "run_outputs_new_us": median_event_us(lambda: s.run(feeds), args.warmup, args.iters),
         "run_sync_wall_us": median_wall_us(given_sync, args.warmup, args.iters),
         "back_to_back_us": back_to_back_us(given, args.warmup, 200),
         "numpy_run_wall_us": median_wall_us(lambda: s.run(host), 5, max(20, args.iters // 10)),
         "events_around_nothing_us": median_event_us(lambda: None, args.warmup, args.iters)}
    s.synchronize()
    r["given_vs_bench"] = r["run_outputs_given_us"] / bench_us
    r["side_vs_bench"] = side_us / bench_us
    r["back_to_back_vs_bench"] = r["back_to_back_us"] / bench_us
    return r, given


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--braze", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--bert-dir")
    ap.add_argument("--iters", type=int, default=500)
    ap.add_argument("--warmup", type=int, default=50)
    args = ap.parse_args()
    if not torch.cuda.is_available() or not braze.gpu_available():
        sys.exit("api_latency.py: needs a GPU")
    os.makedirs(args.out, exist_ok=True)
    timed = [run_case(args, c) for c in cases(args)]
    # The profiler last: once CUPTI has traced a process, its launches stay slower (a run of
    # BERT-base took 116 µs of host time after the tiny model's profile, 22 µs without).
    for r, given in timed:
        r["copies_in_20_device_runs"] = profiled_copies(given)
    rows = [r for r, _ in timed]
    json.dump({"date": time.strftime("%Y-%m-%d"), "device": torch.cuda.get_device_name(), "torch": torch.__version__,
               "braze": braze.version(), "rows": rows}, open(os.path.join(args.out, "api_latency.json"), "w"), indent=1)
    print("| case | kernels | braze bench --warm-l2 | run (default stream) | ÷ bench | run (side stream) | ÷ bench | "
          "back to back | ÷ bench | host time in run | run, outputs new | run + synchronize (wall) | "
          "numpy run (wall) | copies in 20 device runs | exact | run hopped to a side stream | events around nothing |")
    print("| --- " * 17 + "|")
    for r in rows:
        print(f"| {r['case']} | {r['kernels']} | {r['bench_warm_l2_us']:.1f} µs | {r['run_outputs_given_us']:.1f} µs | "
              f"{r['given_vs_bench']:.3f} | {r['run_side_stream_us']:.1f} µs | {r['side_vs_bench']:.3f} | "
              f"{r['back_to_back_us']:.1f} µs | {r['back_to_back_vs_bench']:.3f} | {r['host_call_us']:.1f} µs | "
              f"{r['run_outputs_new_us']:.1f} µs | {r['run_sync_wall_us']:.1f} µs | {r['numpy_run_wall_us']:.1f} µs | "
              f"{r['copies_in_20_device_runs'] or 'none'} | {r['exact']} | {r['run_hopped_us']:.1f} µs | "
              f"{r['events_around_nothing_us']:.1f} µs |")

if __name__ == "__main__":
    main()
