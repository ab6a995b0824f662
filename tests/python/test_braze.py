"""The Python package: braze.compile / load / Session on numpy arrays, errors, and ONNX
Runtime's InferenceSession script run unchanged on braze against onnxruntime itself on the
six bundled models (the CPU reference without a GPU; the GPU when there is one).

Run from the build tree (ctest python.pytest puts build/python first on sys.path) or after
`pip install .`.
"""
import glob
import os
import threading

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import numpy_helper

import braze

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
MODELS = sorted(glob.glob(os.path.join(ROOT, "models", "*", "model.onnx")))
BERT = os.path.join(ROOT, "models", "bert_tiny_legacy")


def read_set(model_dir, prefix):
    files = sorted(glob.glob(os.path.join(model_dir, "test_data_set_0", prefix + "*.pb")),
                   key=lambda f: int(f.rsplit("_", 1)[1].split(".")[0]))
    return [numpy_helper.to_array(onnx.load_tensor(f)) for f in files]


def fresh_inputs(sess, model_dir, seed):
    """Fresh random inputs of the test data's shapes and dtypes (token ids kept in range)."""
    rng = np.random.default_rng(seed)
    out = {}
    for arg, given in zip(sess.get_inputs(), read_set(model_dir, "input_")):
        if np.issubdtype(given.dtype, np.integer):
            out[arg.name] = rng.integers(0, max(int(given.max()), 1) + 1, size=given.shape).astype(given.dtype)
        else:
            out[arg.name] = rng.standard_normal(given.shape).astype(given.dtype)
    return out


@pytest.mark.parametrize("model", MODELS, ids=lambda m: os.path.basename(os.path.dirname(m)))
def test_an_onnxruntime_script_runs_unchanged(model):
    def script(ort):  # written for onnxruntime
        sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
        feeds = fresh_inputs(sess, os.path.dirname(model), 20261204)
        names = [o.name for o in sess.get_outputs()]
        return [i.name for i in sess.get_inputs()], names, sess.run(None, feeds)

    want = script(onnxruntime)
    got = script(braze)
    assert got[0] == want[0] and got[1] == want[1]
    for g, w, name in zip(got[2], want[2], want[1]):
        assert g.shape == w.shape and g.dtype == w.dtype, name
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-4, err_msg=name)


def test_a_session_from_model_bytes_as_onnxruntime_takes_them():
    with open(os.path.join(BERT, "model.onnx"), "rb") as f:
        model = f.read()
    ours = braze.InferenceSession(model, providers=["CPUExecutionProvider"])
    theirs = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"])
    feeds = fresh_inputs(theirs, BERT, 7)
    np.testing.assert_allclose(ours.run(None, feeds)[0], theirs.run(None, feeds)[0], rtol=1e-3, atol=1e-4)
    with pytest.raises(braze.UserError, match="model bytes"):
        braze.InferenceSession(b"not a model")


def test_node_args_spell_types_and_symbolic_dims_as_onnxruntime():
    ours = braze.InferenceSession(os.path.join(BERT, "model.onnx"), providers=["CPUExecutionProvider"])
    theirs = onnxruntime.InferenceSession(os.path.join(BERT, "model.onnx"), providers=["CPUExecutionProvider"])
    for a, b in zip(ours.get_inputs() + ours.get_outputs(), theirs.get_inputs() + theirs.get_outputs()):
        assert (a.name, a.type, a.shape) == (b.name, b.type, b.shape)


@pytest.fixture(scope="module")
def bert():
    return braze.compile(os.path.join(BERT, "model.onnx"), shapes={"input_0": [2, 16], "input_1": [2, 16]})


def test_engine_and_session_on_numpy(bert, tmp_path):
    assert bert.input_names == ["input_0", "input_1"]
    assert bert.outputs == [("output", "float32", [2, 16, 128])]
    assert bert.kernels > 0 and bert.precision == "fp32"
    ins = read_set(BERT, "input_")
    out = braze.Session(bert, "reference").run(dict(zip(bert.input_names, ins)))
    np.testing.assert_allclose(out["output"], read_set(BERT, "output_")[0], rtol=1e-3, atol=1e-5)
    bert.save(str(tmp_path / "bert.braze"))
    again = braze.load(tmp_path / "bert.braze")
    out2 = braze.Session(again, "reference").run(dict(zip(bert.input_names, ins)))
    assert np.array_equal(out["output"], out2["output"])


def test_errors_are_braze_error_subclasses_with_braze_messages(bert):
    with pytest.raises(braze.UserError, match="no such file"):
        braze.compile("/nonexistent/model.onnx")
    with pytest.raises(braze.UserError, match="fp8"):
        braze.compile(os.path.join(BERT, "model.onnx"), precision="fp8")
    s = braze.Session(bert, "reference")
    ins = read_set(BERT, "input_")
    with pytest.raises(braze.UserError, match="input_1"):
        s.run({"input_0": ins[0]})
    with pytest.raises(braze.UserError, match="float32"):
        s.run({"input_0": ins[0].astype(np.float32), "input_1": ins[1]})
    with pytest.raises(braze.UserError, match="backend"):
        braze.Session(bert, "tpu")
    with pytest.raises(braze.UserError, match="providers"):
        braze.InferenceSession(os.path.join(BERT, "model.onnx"), providers=["TPUExecutionProvider"])
    if not braze.gpu_available():
        with pytest.raises(braze.DeviceError):
            braze.Session(bert, "gpu")
    assert issubclass(braze.UserError, braze.Error) and issubclass(braze.DeviceError, braze.Error)


def test_eight_threads_each_with_a_session_on_one_engine(bert):
    backend = "gpu" if braze.gpu_available() else "reference"
    ins = dict(zip(bert.input_names, read_set(BERT, "input_")))
    want = braze.Session(bert, backend).run(ins)["output"]
    got, errors = [None] * 8, []

    def work(t):
        try:
            s = braze.Session(bert, backend)
            for _ in range(3):
                got[t] = s.run(ins)["output"]
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    for g in got:
        assert np.array_equal(g, want)


def test_the_type_stub_is_the_module_s(tmp_path):
    """python/braze/_braze.pyi as nanobind.stubgen writes it for the built module."""
    stubgen = pytest.importorskip("nanobind.stubgen")
    out = tmp_path / "_braze.pyi"
    stubgen.main(["-q", "-m", "braze._braze", "-o", str(out)])
    committed = os.path.join(ROOT, "python", "braze", "_braze.pyi")
    with open(committed) as a, open(out) as b:
        assert a.read() == b.read(), "regenerate: python3 -m nanobind.stubgen -m braze._braze -o python/braze/_braze.pyi"


def test_device_outputs_are_for_cuda_feeds(bert):
    s = braze.Session(bert, "reference")
    ins = dict(zip(bert.input_names, read_set(BERT, "input_")))
    with pytest.raises(braze.UserError, match="outputs="):
        s.run(ins, outputs={"output": np.zeros(1)})
    s.synchronize()  # nothing enqueued


def _torch_on_gpu():
    torch = pytest.importorskip("torch")
    if not braze.gpu_available() or not torch.cuda.is_available():
        pytest.skip("no GPU")
    return torch


def test_torch_cuda_tensors_are_read_and_written_in_place(bert):
    torch = _torch_on_gpu()
    s = braze.Session(bert, "gpu")
    host = dict(zip(bert.input_names, read_set(BERT, "input_")))
    host["input_0"] = host["input_0"][:, ::-1].copy()  # other inputs than a first host run's
    want = braze.Session(bert, "gpu").run(host)
    s.run(dict(zip(bert.input_names, read_set(BERT, "input_"))))
    feeds = {k: torch.from_numpy(v).cuda() for k, v in host.items()}
    got = s.run(feeds)  # new torch tensors, enqueued on the current stream
    assert all(isinstance(t, torch.Tensor) and t.is_cuda for t in got.values())
    s.synchronize()
    for k, w in want.items():
        assert np.array_equal(got[k].cpu().numpy(), w), k
    # Into the caller's tensors (poisoned first), on a side stream.
    side = torch.cuda.Stream()
    outs = {n: torch.full(tuple(shape), float("nan"), dtype=getattr(torch, dt), device="cuda")
            for n, dt, shape in bert.outputs}
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        assert s.run(feeds, outputs=outs) is outs
    side.synchronize()
    for k, w in want.items():
        assert np.array_equal(outs[k].cpu().numpy(), w), k
    for mixed in ({"input_0": feeds["input_0"], "input_1": host["input_1"]},
                  {"input_0": host["input_0"], "input_1": feeds["input_1"]}):
        with pytest.raises(braze.UserError, match="one side"):
            s.run(mixed)
    with pytest.raises(braze.UserError, match="contiguous"):
        s.run({"input_0": feeds["input_0"].t().contiguous().t(), "input_1": feeds["input_1"]})
    with pytest.raises(braze.UserError, match="input_0"):
        s.run({"input_0": feeds["input_0"].int(), "input_1": feeds["input_1"]})


class _FakeDType:
    def __init__(self, name):
        self.name = name

    def __str__(self):
        return "torch." + self.name


class _FakeTorchTensor:
    """What TorchBinding reads of a PyTorch tensor: data_ptr(), dtype, shape, is_contiguous()."""

    def __init__(self, address, dtype, shape, contiguous=True):
        self.address, self.dtype, self.shape, self.contiguous = address, dtype, tuple(shape), contiguous

    def data_ptr(self):
        return self.address

    def is_contiguous(self):
        return self.contiguous


def test_the_torch_binding_runs_only_on_what_it_kept(bert):
    """Session.run's fast path (no GPU needed: a hit reaches run_device, which the reference
    backend refuses); any difference from the kept tensors is a miss, left to the full path."""
    from braze._braze import TorchBinding
    session = braze.Session(bert, "reference")._session
    dtypes = {dt: _FakeDType(dt) for dt in ("int64", "float32", "float16")}
    ins = [_FakeTorchTensor(4096 * (i + 1), dtypes[dt], shape) for i, (_, dt, shape) in enumerate(bert.inputs)]
    outs = [_FakeTorchTensor(65536 * (i + 1), dtypes[dt], shape) for i, (_, dt, shape) in enumerate(bert.outputs)]
    binding = TorchBinding(bert.input_names, bert.output_names)
    feeds, outputs = dict(zip(bert.input_names, ins)), dict(zip(bert.output_names, outs))
    assert binding.run(session, feeds, outputs, 0) is None  # nothing kept yet
    binding.keep(ins + outs, None)
    with pytest.raises(braze.UserError, match="CPU"):
        binding.run(session, feeds, outputs, 0)  # a hit
    assert binding.run(session, feeds, outputs, None) is None  # no stream, no current-stream function
    first, x = bert.input_names[0], ins[0]
    misses = {
        "another address": dict(feeds, **{first: _FakeTorchTensor(x.address + 256, x.dtype, x.shape)}),
        "another dtype": dict(feeds, **{first: _FakeTorchTensor(x.address, dtypes["float16"], x.shape)}),
        "another shape": dict(feeds, **{first: _FakeTorchTensor(x.address, x.dtype, x.shape[::-1] + (1,))}),
        "not dense": dict(feeds, **{first: _FakeTorchTensor(x.address, x.dtype, x.shape, contiguous=False)}),
        "another type": dict(feeds, **{first: np.zeros(x.shape, np.int64)}),
        "a feed more": dict(feeds, extra=x),
        "a feed less": {k: v for k, v in feeds.items() if k != first},
    }
    for what, f in misses.items():
        assert binding.run(session, f, outputs, 0) is None, what
    assert binding.run(session, feeds, {}, 0) is None
    assert binding.run(session, list(feeds.values()), outputs, 0) is None
    with pytest.raises(braze.UserError, match="CPU"):
        binding.run(session, feeds, outputs, 0)  # the kept binding is still there


def test_a_kept_torch_binding_still_checks_what_it_is_given(bert):
    """Runs on the same tensors reuse their binding, yet read the tensors' current contents
    and see a tensor replaced, or viewed at the same address with other strides."""
    torch = _torch_on_gpu()
    s = braze.Session(bert, "gpu")
    a = dict(zip(bert.input_names, read_set(BERT, "input_")))
    b = dict(a, input_0=a["input_0"][:, ::-1].copy())
    want_a, want_b = s.run(a), s.run(b)
    feeds = {k: torch.from_numpy(v).cuda() for k, v in a.items()}
    outs = {n: torch.empty(tuple(shape), dtype=getattr(torch, dt), device="cuda") for n, dt, shape in bert.outputs}

    def check(want):
        for o in outs.values():
            o.fill_(float("nan"))
        s.run(feeds, outputs=outs)
        s.synchronize()
        for k, w in want.items():
            assert np.array_equal(outs[k].cpu().numpy(), w), k

    check(want_a)
    feeds["input_0"].copy_(torch.from_numpy(b["input_0"]))  # same tensor, new contents
    check(want_b)
    feeds["input_0"] = torch.from_numpy(a["input_0"]).cuda()  # another tensor
    check(want_a)
    x = feeds["input_0"]
    strided = x.as_strided(x.shape, (1, x.shape[0]))  # same address, shape and dtype; not dense
    with pytest.raises(braze.UserError, match="contiguous"):
        s.run(dict(feeds, input_0=strided), outputs=outs)
    with pytest.raises(braze.UserError, match="input_0"):
        s.run(dict(feeds, input_0=x.view(torch.float64 if x.element_size() == 8 else torch.float32)), outputs=outs)
    check(want_a)


class _DLPackOnly:
    """A CUDA array known only by the DLPack protocol (as CuPy's or JAX's would be)."""

    def __init__(self, t):
        self.t = t

    def __dlpack__(self, **kwargs):
        return self.t.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.t.__dlpack_device__()


def test_any_dlpack_cuda_array_is_read_in_place(bert):
    torch = _torch_on_gpu()
    s = braze.Session(bert, "gpu")
    host = dict(zip(bert.input_names, read_set(BERT, "input_")))
    want = s.run(host)
    feeds = {k: _DLPackOnly(torch.from_numpy(v).cuda()) for k, v in host.items()}
    with pytest.raises(braze.UserError, match="outputs="):
        s.run(feeds)  # braze allocates like PyTorch and CuPy arrays only
    outs = {n: torch.full(tuple(shape), float("nan"), dtype=getattr(torch, dt), device="cuda")
            for n, dt, shape in bert.outputs}
    s.run(feeds, outputs={n: _DLPackOnly(t) for n, t in outs.items()}, stream=torch.cuda.current_stream().cuda_stream)
    s.synchronize()
    for k, w in want.items():
        assert np.array_equal(outs[k].cpu().numpy(), w), k
