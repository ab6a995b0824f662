"""braze: ONNX models compiled into a few fused CUDA kernels, and the runtime that runs them.

    import braze
    engine = braze.compile("model.onnx", shapes={"input_0": [2, 16]}, precision="fp16")
    session = braze.Session(engine)              # the GPU when there is one
    outputs = session.run({"input_0": ids, "input_1": mask})   # name -> numpy array

or, for a script written for ONNX Runtime, change its import:

    import braze as ort
    sess = ort.InferenceSession("model.onnx", providers=["CUDAExecutionProvider"])
    outputs = sess.run(None, {sess.get_inputs()[0].name: x})

Errors raise braze.Error subclasses (UserError, DeviceError, InternalError) with braze's message.
"""
from __future__ import annotations

import numpy as np

from ._braze import (DeviceError, Engine, Error, InternalError, UserError, gpu_available,
                     version)
from ._braze import Session as _Session

__all__ = ["compile", "load", "Engine", "Session", "InferenceSession", "NodeArg", "Error",
           "UserError", "DeviceError", "InternalError", "gpu_available", "version",
           "get_available_providers"]
__version__ = version()


def compile(model, shapes=None, precision="fp32", fuse=True, tune=False, arch="", use_cache=True) -> Engine:
    """Compile an ONNX model (a path, or a serialized ModelProto as bytes) into an Engine (no
    GPU needed).

    shapes: {input name: [dims]} for symbolic dims (those not given default to 1);
    precision: "fp32", "tf32", "fp16" or "bf16"; tune: time each kernel's candidates on the GPU.
    """
    shapes = {k: [int(d) for d in v] for k, v in (shapes or {}).items()}
    if isinstance(model, (bytes, bytearray)):
        return Engine.compile_bytes(bytes(model), shapes, precision, fuse, tune, arch, use_cache)
    return Engine.compile(str(model), shapes, precision, fuse, tune, arch, use_cache)


def load(path) -> Engine:
    """Load an engine file written by Engine.save or `braze compile`."""
    return Engine.load(str(path))


class Session:
    """Runs an Engine: backend "auto" (the GPU when there is one), "gpu" or "reference"."""

    def __init__(self, engine: Engine, backend: str = "auto"):
        self.engine = engine
        self._session = _Session(engine, backend)

    @property
    def backend(self) -> str:
        return self._session.backend

    def run(self, feeds: dict) -> dict:
        """feeds: {input name: numpy array}; returns {output name: numpy array}."""
        missing = [n for n in self.engine.input_names if n not in feeds]
        if missing:
            raise UserError(f"no array given for input {', '.join(repr(n) for n in missing)}")
        unknown = [n for n in feeds if n not in self.engine.input_names]
        if unknown:
            raise UserError(f"{', '.join(repr(n) for n in unknown)}: not an input of the model "
                            f"(inputs: {', '.join(self.engine.input_names)})")
        arrays = [np.ascontiguousarray(feeds[n]) for n in self.engine.input_names]
        return dict(zip(self.engine.output_names, self._session.run(arrays)))


# ONNX Runtime's spellings of tensor types (NodeArg.type).
_ORT_TYPES = {"float32": "tensor(float)", "float16": "tensor(float16)", "bfloat16": "tensor(bfloat16)",
              "float64": "tensor(double)", "int64": "tensor(int64)", "int32": "tensor(int32)",
              "int16": "tensor(int16)", "int8": "tensor(int8)", "uint64": "tensor(uint64)",
              "uint32": "tensor(uint32)", "uint16": "tensor(uint16)", "uint8": "tensor(uint8)",
              "bool": "tensor(bool)"}
_GPU_PROVIDERS = ("CUDAExecutionProvider", "TensorrtExecutionProvider")


class NodeArg:
    """An input or output as ONNX Runtime describes it: name, shape (symbolic dims as their
    names), type ("tensor(float)" …)."""

    def __init__(self, name, shape, type):
        self.name, self.shape, self.type = name, shape, type

    def __repr__(self):
        return f"NodeArg(name={self.name!r}, type={self.type!r}, shape={self.shape!r})"


def get_available_providers():
    return (["CUDAExecutionProvider"] if gpu_available() else []) + ["CPUExecutionProvider"]


def _backend_for(providers):
    if not providers:
        return "auto"
    names = [p[0] if isinstance(p, (tuple, list)) else p for p in providers]
    for n in names:
        if n in _GPU_PROVIDERS:
            return "gpu" if gpu_available() else "reference"
        if n == "CPUExecutionProvider":
            return "reference"
    raise UserError(f"providers {names}: braze runs CUDAExecutionProvider, TensorrtExecutionProvider "
                    "(the GPU) or CPUExecutionProvider (the CPU reference)")


class InferenceSession:
    """ONNX Runtime's InferenceSession on braze: `run(output_names, input_feed)`, `get_inputs()`,
    `get_outputs()`. Each new set of input shapes compiles an engine (kernels come from the
    kernel cache after the first time); providers pick the backend as ONNX Runtime names them."""

    def __init__(self, path_or_bytes, sess_options=None, providers=None, provider_options=None, **kwargs):
        import onnx
        is_bytes = isinstance(path_or_bytes, (bytes, bytearray))
        self._model = bytes(path_or_bytes) if is_bytes else str(path_or_bytes)
        self._backend = _backend_for(providers)
        self._precision = kwargs.get("precision", "fp32")
        what = "the model bytes" if is_bytes else self._model
        try:
            model = (onnx.load_from_string(self._model) if is_bytes else
                     onnx.load(self._model, load_external_data=False))
        except Exception as e:  # noqa: BLE001 — onnx raises several kinds
            raise UserError(f"{what}: cannot read the model ({e})") from None
        inits = {i.name for i in model.graph.initializer}
        self._inputs = [self._node_arg(v) for v in model.graph.input if v.name not in inits]
        self._outputs = [self._node_arg(v) for v in model.graph.output]
        self._sessions = {}

    @staticmethod
    def _node_arg(v):
        t = v.type.tensor_type
        import onnx
        dtype = onnx.helper.tensor_dtype_to_np_dtype(t.elem_type) if t.elem_type else None
        name = {np.dtype(np.float32): "float32", np.dtype(np.float16): "float16",
                np.dtype(np.float64): "float64", np.dtype(np.bool_): "bool"}.get(
                    np.dtype(dtype) if dtype is not None else None, str(np.dtype(dtype)) if dtype is not None else "")
        shape = [d.dim_param if d.dim_param else (d.dim_value if d.HasField("dim_value") else None)
                 for d in t.shape.dim]
        return NodeArg(v.name, shape, _ORT_TYPES.get(name, f"tensor({name})"))

    def get_inputs(self):
        return list(self._inputs)

    def get_outputs(self):
        return list(self._outputs)

    def get_providers(self):
        return ["CUDAExecutionProvider"] if self._backend == "gpu" or (
            self._backend == "auto" and gpu_available()) else ["CPUExecutionProvider"]

    def _session_for(self, feeds):
        key = tuple((a.name, tuple(np.shape(feeds[a.name]))) for a in self._inputs if a.name in feeds)
        if key not in self._sessions:
            engine = compile(self._model, shapes={n: list(s) for n, s in key}, precision=self._precision)
            self._sessions[key] = Session(engine, self._backend)
        return self._sessions[key]

    def run(self, output_names, input_feed, run_options=None):
        """Returns a list of numpy arrays, in `output_names` order (None: all outputs)."""
        outs = self._session_for(input_feed).run(input_feed)
        names = output_names or [o.name for o in self._outputs]
        for n in names:
            if n not in outs:
                raise UserError(f"{n!r} is not an output of the model (outputs: {', '.join(outs)})")
        return [outs[n] for n in names]
