#!/usr/bin/env python3
"""ONNX Runtime as an independent oracle on fresh random inputs.

For every bundled model (models/<name>/model.onnx), draws random inputs of the shapes and
dtypes of its test_data_set_0 (floats from a normal distribution, integers in 0..9 — valid
token ids and mask values for these models — never all zeros), runs them through ONNX
Runtime's CPU provider, and checks `braze run --backend B --inputs ... --check ...` against
ONNX Runtime's outputs for each backend B given (braze's default tolerances: rtol 1e-3,
atol 1e-5 for float32). Exit 0 when every model agrees on every backend, 1 otherwise, 77
(CTest's skip) when onnxruntime is not installed or a gpu backend is asked for without a GPU.

usage: ort_oracle.py BRAZE MODELS_DIR SEED BACKEND...
"""
import glob
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import onnx
    from onnx import numpy_helper
    import onnxruntime as ort
except ImportError as e:  # scripts/setup.sh installs them
    print(f"skipped: {e} (scripts/setup.sh installs onnx, onnxruntime and numpy)")
    sys.exit(77)


def random_like(t, rng):
    if np.issubdtype(t.dtype, np.floating):
        return rng.standard_normal(t.shape).astype(t.dtype)
    if t.dtype == np.bool_:
        return rng.random(t.shape) < 0.5
    x = rng.integers(0, 10, size=t.shape).astype(t.dtype)
    if x.size and not x.any():
        x.flat[0] = 1
    return x


def main():
    if len(sys.argv) < 5:
        print(__doc__)
        return 2
    braze, models, seed, backends = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
    if any(b.startswith("gpu") for b in backends):
        doctor = subprocess.run([braze, "doctor"], capture_output=True, text=True)
        if doctor.returncode != 0:
            why = [l for l in doctor.stdout.splitlines() if l.startswith("GPU:")] or ["braze doctor failed"]
            print("skipped: no GPU (" + why[0] + ")")
            return 77
    rng = np.random.default_rng(seed)
    failures = 0
    dirs = sorted(d for d in glob.glob(os.path.join(models, "*")) if os.path.isfile(os.path.join(d, "model.onnx")))
    if not dirs:
        print(f"no models under {models}")
        return 1
    for d in dirs:
        name = os.path.basename(d)
        model = os.path.join(d, "model.onnx")
        sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
        examples = sorted(glob.glob(os.path.join(d, "test_data_set_0", "input_*.pb")))
        names = [i.name for i in sess.get_inputs()]
        if len(examples) != len(names):
            print(f"FAIL {name}: {len(examples)} example inputs for {len(names)} model inputs")
            failures += 1
            continue
        feeds = {}
        for n, path in zip(names, examples):
            t = onnx.TensorProto()
            with open(path, "rb") as f:
                t.ParseFromString(f.read())
            feeds[n] = random_like(numpy_helper.to_array(t), rng)
        outs = sess.run(None, feeds)
        with tempfile.TemporaryDirectory() as tmp:
            ins, want = os.path.join(tmp, "in"), os.path.join(tmp, "want")
            os.makedirs(ins)
            os.makedirs(want)
            for n, v in feeds.items():
                np.save(os.path.join(ins, n + ".npy"), v)
            for o, v in zip(sess.get_outputs(), outs):
                np.save(os.path.join(want, o.name + ".npy"), v)
            for b in backends:
                cmd = [braze, "run", model, "--backend", b, "--inputs", ins, "--check", want]
                r = subprocess.run(cmd, capture_output=True, text=True)
                checks = [l for l in r.stdout.splitlines() if l.startswith("check ")]
                ok = r.returncode == 0 and checks and all(" ok" in l for l in checks)
                print(f"{'ok  ' if ok else 'FAIL'} {name} --backend {b}: " + ("; ".join(checks) or "no check lines"))
                if not ok:
                    failures += 1
                    print(r.stdout[-2000:], r.stderr[-2000:], sep="\n")
    print(f"{failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
