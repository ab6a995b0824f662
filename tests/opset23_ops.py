#!/usr/bin/env python3
"""Opset 23-24's Attention, RMSNormalization, RotaryEmbedding and Swish against ONNX's
reference implementation (onnx.reference, the errata of 1.23 included) on fresh random
inputs.

Each case is a one-node model; braze imports it (expanding the op into primitives), runs it
on each backend given, and its outputs are compared with onnx.reference's on the same
inputs: float32 within rtol 1e-4 / atol 1e-5, float16 by relative L2 <= 5e-3 and every
element within 2e-2 + 2e-2 |want|. On the emulator and the GPU the attention cases must
also be one `attention` kernel (braze inspect --json), where float16 takes the flash kernel.

Exit 0 when every case agrees, 1 otherwise, 77 (CTest's skip) when onnx or numpy is missing
or a gpu backend is asked for without a GPU.

usage: opset23_ops.py BRAZE SEED BACKEND...
"""
import json
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import onnx
    from onnx import TensorProto as T
    from onnx import helper as h
    from onnx import numpy_helper
    from onnx.reference import ReferenceEvaluator
except ImportError as e:  # scripts/setup.sh installs them
    print(f"skipped: {e} (scripts/setup.sh installs onnx and numpy)")
    sys.exit(77)

F32, F16 = T.FLOAT, T.FLOAT16
NP = {F32: np.float32, F16: np.float16}


def attention_case(name, dt, q, k, v, mask=None, past=None, opset=23, **attrs):
    """Attention with Q, K, V of shapes q, k, v; mask (shape, 'bool' or 'float'); past
    (past_key shape, past_value shape) adds the cache inputs and present outputs."""
    ins = [h.make_tensor_value_info("Q", dt, q), h.make_tensor_value_info("K", dt, k),
           h.make_tensor_value_info("V", dt, v)]
    names = ["Q", "K", "V"]
    if mask is not None:
        shape, kind = mask
        ins.append(h.make_tensor_value_info("mask", T.BOOL if kind == "bool" else dt, shape))
        names.append("mask")
    elif past is not None:
        names.append("")
    outs = ["Y"]
    if past is not None:
        ins += [h.make_tensor_value_info("past_key", dt, past[0]), h.make_tensor_value_info("past_value", dt, past[1])]
        names += ["past_key", "past_value"]
        outs += ["present_key", "present_value"]
    node = h.make_node("Attention", names, outs, **attrs)
    out_vi = [h.make_tensor_value_info(o, dt, None) for o in outs]
    g = h.make_graph([node], name, ins, out_vi)
    return name, h.make_model(g, opset_imports=[h.make_opsetid("", opset)], ir_version=10)


def one_node(name, op, dt, inputs, attrs, opset=23, extra_inits=()):
    ins = [h.make_tensor_value_info(n, t, s) for n, t, s in inputs]
    node = h.make_node(op, [n for n, _, _ in inputs] + [i.name for i in extra_inits], ["Y"], **attrs)
    g = h.make_graph([node], name, ins, [h.make_tensor_value_info("Y", dt, None)], list(extra_inits))
    return name, h.make_model(g, opset_imports=[h.make_opsetid("", opset)], ir_version=10)


def projection_rotary_case(name, dt, four_d, interleaved):
    """X [2, 7, 64] projected to 4 heads of 16, then RotaryEmbedding by caches gathered at
    position_ids (3-D with num_heads, or on the heads split and transposed): the rotation
    belongs in the product's kernel (the pipeline's rotary_projections)."""
    b, s, e, heads, d = 2, 7, 64, 4, 16
    rng = np.random.default_rng(23)
    inv = 1.0 / (10000 ** (np.arange(0, d, 2) / d))
    angles = np.arange(11)[:, None] * inv[None, :]
    inits = [numpy_helper.from_array((rng.standard_normal((e, heads * d)) / 8).astype(NP[dt]), "W"),
             numpy_helper.from_array(np.cos(angles).astype(NP[dt]), "cos_cache"),
             numpy_helper.from_array(np.sin(angles).astype(NP[dt]), "sin_cache"),
             numpy_helper.from_array(np.array([b, s, heads, d], np.int64), "heads")]
    nodes = [h.make_node("MatMul", ["X", "W"], ["P"])]
    x = "P"
    attrs = {"interleaved": interleaved}
    if four_d:
        nodes += [h.make_node("Reshape", ["P", "heads"], ["R"]), h.make_node("Transpose", ["R"], ["T"], perm=[0, 2, 1, 3])]
        x = "T"
    else:
        attrs["num_heads"] = heads
    nodes.append(h.make_node("RotaryEmbedding", [x, "cos_cache", "sin_cache", "pos"], ["Y"], **attrs))
    ins = [h.make_tensor_value_info("X", dt, [b, s, e]), h.make_tensor_value_info("pos", T.INT64, [b, s])]
    g = h.make_graph(nodes, name, ins, [h.make_tensor_value_info("Y", dt, None)], inits)
    return name, h.make_model(g, opset_imports=[h.make_opsetid("", 23)], ir_version=10)


def cases():
    c = []
    for dt, tag in ((F32, "f32"), (F16, "f16")):
        c += [
            attention_case(f"attn_mha_4d_{tag}", dt, [2, 3, 17, 32], [2, 3, 17, 32], [2, 3, 17, 32]),
            attention_case(f"attn_causal_gqa4_{tag}", dt, [1, 8, 33, 64], [1, 2, 33, 64], [1, 2, 33, 64], is_causal=1),
            attention_case(f"attn_mqa_3d_{tag}", dt, [2, 9, 4 * 16], [2, 9, 16], [2, 9, 16], q_num_heads=4, kv_num_heads=1),
            attention_case(f"attn_gqa8_3d_causal_{tag}", dt, [1, 40, 8 * 32], [1, 40, 32], [1, 40, 32], q_num_heads=8,
                           kv_num_heads=1, is_causal=1),
            attention_case(f"attn_bool_mask_{tag}", dt, [2, 2, 5, 16], [2, 2, 7, 16], [2, 2, 7, 16],
                           mask=([2, 1, 5, 7], "bool")),
            attention_case(f"attn_dead_row_{tag}", dt, [1, 2, 9, 32], [1, 2, 11, 32], [1, 2, 11, 32],
                           mask=([1, 1, 9, 11], "bool")),
            attention_case(f"attn_float_mask_scale_{tag}", dt, [1, 2, 6, 32], [1, 2, 6, 32], [1, 2, 6, 32],
                           mask=([6, 6], "float"), scale=0.3),
            attention_case(f"attn_softcap_{tag}", dt, [1, 2, 8, 16], [1, 2, 8, 16], [1, 2, 8, 16], softcap=2.0),
            attention_case(f"attn_short_mask_{tag}", dt, [1, 1, 4, 16], [1, 1, 6, 16], [1, 1, 6, 16],
                           mask=([4, 4], "bool")),
            attention_case(f"attn_s1_{tag}", dt, [1, 4, 1, 32], [1, 4, 1, 32], [1, 4, 1, 32]),
            attention_case(f"attn_past_causal_{tag}", dt, [1, 2, 3, 16], [1, 2, 3, 16], [1, 2, 3, 16],
                           past=([1, 2, 5, 16], [1, 2, 5, 16]), is_causal=1),
            attention_case(f"attn_opset24_{tag}", dt, [1, 2, 20, 16], [1, 2, 20, 16], [1, 2, 20, 16], opset=24,
                           is_causal=1),
            one_node(f"rms_last_{tag}", "RMSNormalization", dt, [("X", dt, [3, 5, 64]), ("scale", dt, [64])],
                     {"epsilon": 1e-5}),
            one_node(f"rms_axis1_{tag}", "RMSNormalization", dt, [("X", dt, [4, 3, 8]), ("scale", dt, [3, 8])],
                     {"axis": 1}),
            one_node(f"rotary_4d_{tag}", "RotaryEmbedding", dt,
                     [("X", dt, [2, 3, 5, 16]), ("cos", dt, [2, 5, 8]), ("sin", dt, [2, 5, 8])], {}),
            one_node(f"rotary_3d_ids_partial_{tag}", "RotaryEmbedding", dt,
                     [("X", dt, [2, 5, 4 * 16]), ("cos", dt, [11, 4]), ("sin", dt, [11, 4]), ("pos", T.INT64, [2, 5])],
                     {"num_heads": 4, "rotary_embedding_dim": 8}),
            one_node(f"rotary_interleaved_{tag}", "RotaryEmbedding", dt,
                     [("X", dt, [1, 2, 6, 8]), ("cos", dt, [1, 6, 4]), ("sin", dt, [1, 6, 4])], {"interleaved": 1}),
            one_node(f"swish_{tag}", "Swish", dt, [("X", dt, [7, 33])], {"alpha": 0.7}, opset=24),
            projection_rotary_case(f"rotary_projection_3d_{tag}", dt, False, 0),
            projection_rotary_case(f"rotary_projection_4d_interleaved_{tag}", dt, True, 1),
        ]
    return c


def random_inputs(model, rng):
    """Normal floats, ids in 0..10, boolean masks keeping key 0 of every row (but for the
    *dead_row* cases, whose query 3 sees no key: its output must be zeros)."""
    feeds = {}
    for vi in model.graph.input:
        tt = vi.type.tensor_type
        shape = [d.dim_value for d in tt.shape.dim]
        if tt.elem_type == T.BOOL:
            x = rng.random(shape) < 0.7
            if x.ndim >= 1:
                x[..., 0] = True
                if "dead_row" in model.graph.name:
                    x[..., 3, :] = False
        elif tt.elem_type == T.INT64:
            x = rng.integers(0, 11, size=shape).astype(np.int64)
        else:
            x = rng.standard_normal(shape).astype(NP[tt.elem_type])
        feeds[vi.name] = x
    return feeds


def inspect_kernels(braze, path):
    p = subprocess.run([braze, "inspect", path, "--json"], capture_output=True, text=True)
    return json.loads(p.stdout).get("kernels", []) if p.returncode == 0 else None


def inspect_attention_kernels(braze, path):
    kernels = inspect_kernels(braze, path)
    return None if kernels is None else sum(1 for k in kernels if k.get("kind") == "attention")


def rotation_outside_product(braze, path):
    """Why the rotation of a rotary_projection case is not in its product's kernel, or ""."""
    kernels = inspect_kernels(braze, path)
    if kernels is None:
        return "braze inspect failed"
    rotating = [k for k in kernels if "SwapPairs" in k.get("ops", [])]
    if len(rotating) != 1 or rotating[0].get("kind") != "gemm":
        return f"{len(rotating)} kernels rotate, expected the product's"
    if any("Sub" in k.get("ops", []) for k in kernels):
        return "the rotation's element-wise form is still there"
    return ""


def check(got, want, dt):
    got, want = got.astype(np.float64), want.astype(np.float64)
    if got.shape != want.shape:
        return f"shape {got.shape}, expected {want.shape}"
    if dt == F32:
        ok = np.allclose(got, want, rtol=1e-4, atol=1e-5, equal_nan=True)
        return "" if ok else f"max abs err {np.nanmax(np.abs(got - want)):.3g}"
    rel = np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-12)
    worst = np.abs(got - want) - (2e-2 + 2e-2 * np.abs(want))
    if rel > 5e-3 or np.nanmax(worst) > 0 or np.isnan(got).sum() != np.isnan(want).sum():
        return f"relative L2 {rel:.3g}, max abs err {np.nanmax(np.abs(got - want)):.3g}"
    return ""


def main():
    if len(sys.argv) < 4:
        print(__doc__)
        return 2
    braze, seed, backends = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    if any(b.startswith("gpu") for b in backends):
        if subprocess.run([braze, "doctor"], capture_output=True, text=True).returncode != 0:
            print("skipped: no GPU")
            return 77
    rng = np.random.default_rng(seed)
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, model in cases():
            path = os.path.join(tmp, name + ".onnx")
            onnx.save(model, path)
            feeds = random_inputs(model, rng)
            want = ReferenceEvaluator(model).run(None, feeds)
            files = []
            for vi in model.graph.input:
                f = os.path.join(tmp, f"{name}_{vi.name}.npy")
                np.save(f, feeds[vi.name])
                files.append(f)
            dt = model.graph.input[0].type.tensor_type.elem_type
            for b in backends:
                outdir = os.path.join(tmp, f"{name}_{b}")
                p = subprocess.run([braze, "run", path, "--backend", b, "--inputs", *files, "--outputs", outdir],
                                   capture_output=True, text=True)
                if p.returncode != 0:
                    print(f"FAIL {name} [{b}]: braze run: {(p.stdout + p.stderr).strip()[-600:]}")
                    failures += 1
                    continue
                errs = []
                for o, w in zip(model.graph.output, want):
                    why = check(np.load(os.path.join(outdir, o.name + ".npy")), w, dt)
                    if why:
                        errs.append(f"{o.name}: {why}")
                if name.startswith("attn") and dt == F16 and b != "reference":
                    n = inspect_attention_kernels(braze, path)
                    if n != 1:
                        errs.append(f"{n} attention kernels, expected 1")
                if name.startswith("rotary_projection") and b != "reference":
                    why = rotation_outside_product(braze, path)
                    if why:
                        errs.append(why)
                if errs:
                    print(f"FAIL {name} [{b}]: " + "; ".join(errs))
                    failures += 1
                else:
                    print(f"ok   {name} [{b}]")
    print(f"{failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
