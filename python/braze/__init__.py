"""braze: ONNX models compiled into a few fused CUDA kernels, and the runtime that runs them.

    import braze
    engine = braze.compile("model.onnx", shapes={"input_0": [2, 16]}, precision="fp16")
    session = braze.Session(engine)              # the GPU when there is one
    outputs = session.run({"input_0": ids, "input_1": mask})   # name -> numpy array
    outputs = session.run({"input_0": ids_cuda, "input_1": mask_cuda})  # torch CUDA tensors, in place

or, for a script written for ONNX Runtime, change its import:

    import braze as ort
    sess = ort.InferenceSession("model.onnx", providers=["CUDAExecutionProvider"])
    outputs = sess.run(None, {sess.get_inputs()[0].name: x})

Errors raise braze.Error subclasses (UserError, DeviceError, InternalError) with braze's message.
"""
from __future__ import annotations

import sys

import numpy as np

from ._braze import (DeviceError, Engine, Error, InternalError, UserError, gpu_available,
                     version)
from ._braze import Session as _Session
from ._braze import TorchBinding as _TorchBinding

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
    """Runs an Engine: backend "auto" (the GPU when there is one), "gpu", "reference" (the CPU
    reference executor) or "emulator" (the GPU path's kernels generated for the CPU)."""

    def __init__(self, engine: Engine, backend: str = "auto"):
        self.engine = engine
        self._session = _Session(engine, backend)
        self._inputs = list(engine.input_names)
        self._outputs = list(engine.output_names)
        self._torch_outputs = None  # (name, shape, torch dtype) of each output, on first use
        self._stream = 0            # the last device run's stream
        self._torch_binding = _TorchBinding(self._inputs, self._outputs)  # the last PyTorch run's

    @property
    def backend(self) -> str:
        return self._session.backend

    @property
    def notes(self) -> list:
        """Kernels recompiled for this GPU, groups run on the CPU reference (emulator: after a run)."""
        return self._session.notes

    def run(self, feeds: dict, outputs: dict | None = None, stream: int | None = None) -> dict:
        """feeds: {input name: array}; returns {output name: array}.

        numpy arrays (or any host array) are copied to the device and back: the outputs are
        numpy arrays, and run returns when they are ready.

        CUDA arrays (PyTorch, CuPy or any `__dlpack__` object on cuda:0, contiguous) are read in
        place on the GPU backend, with no host copy. The outputs are written into `outputs`
        ({output name: CUDA array}) when given, else into new PyTorch / CuPy arrays like the
        first input; run returns them without waiting, the work enqueued on `stream` (a
        cudaStream_t as an int; default: the current PyTorch / CuPy stream), so work that
        follows on that stream sees them. Call synchronize() to wait and to have a failed
        run-time check (an out-of-range index) raised. With a `stream` other than the current
        one, keep the feeds and outputs alive until that stream's work is done (PyTorch's
        allocator orders reuse by its current stream only).
        """
        if outputs is not None:  # the same PyTorch tensors as the last run's: its binding
            used = self._torch_binding.run(self._session, feeds, outputs, stream)
            if used is not None:
                self._stream = used
                return outputs
        self._check_names(feeds)
        values = [feeds[n] for n in self._inputs]
        torch_tensor = _torch_tensor_type()
        if torch_tensor is not None and values and type(values[0]) is torch_tensor and values[0].is_cuda:
            return self._run_torch(values, outputs, stream)
        on_device = [_on_cuda(v) for v in values]
        if any(on_device):
            if not all(on_device):
                host = self._inputs[on_device.index(False)]
                raise UserError(f"input {host!r} is a host array and others are CUDA arrays: give all on one side "
                                "(host arrays, or CUDA tensors)")
            return self._run_device(values, outputs, stream)
        if outputs is not None:
            raise UserError("outputs= takes CUDA arrays, for CUDA feeds; host feeds return new numpy arrays")
        arrays = [np.ascontiguousarray(v) for v in values]
        return dict(zip(self._outputs, self._session.run(arrays)))

    def synchronize(self, stream: int | None = None) -> None:
        """Wait for the device runs on `stream` (default: the last run's); raises UserError for
        a failed run-time check of any device run since the last call."""
        self._session.synchronize(self._stream if stream is None else int(stream))

    def _check_names(self, feeds):
        if len(feeds) == len(self._inputs) and all(n in feeds for n in self._inputs):
            return
        missing = [n for n in self._inputs if n not in feeds]
        if missing:
            raise UserError(f"no array given for input {', '.join(repr(n) for n in missing)}")
        unknown = [n for n in feeds if n not in self._inputs]
        raise UserError(f"{', '.join(repr(n) for n in unknown)}: not an input of the model "
                        f"(inputs: {', '.join(self._inputs)})")

    def _run_device(self, values, outputs, stream):
        first = values[0]
        if outputs is None:
            outputs = self._allocate(first)
        else:
            missing = [n for n in self._outputs if n not in outputs]
            if missing:
                raise UserError(f"outputs= lacks {', '.join(repr(n) for n in missing)}")
        if stream is None:
            stream = _current_stream(first)
        self._stream = int(stream)
        self._session.run_device(values, [outputs[n] for n in self._outputs], self._stream)
        return outputs

    def _run_torch(self, values, outputs, stream):
        """PyTorch CUDA tensors by their own attributes (their __dlpack__ costs microseconds),
        kept as the binding that runs on the same tensors take (TorchBinding)."""
        if outputs is None:
            outputs = self._allocate(values[0])
        missing = [n for n in self._outputs if n not in outputs]
        if missing:
            raise UserError(f"outputs= lacks {', '.join(repr(n) for n in missing)}")
        for v, name in zip(values, self._inputs):
            _check_torch(v, name, "input")
        for name in self._outputs:
            _check_torch(outputs[name], name, "output")
        current = getattr(sys.modules["torch"]._C, "_cuda_getCurrentRawStream", None)  # no Stream object made
        self._torch_binding.keep(values + [outputs[n] for n in self._outputs], current)
        if stream is None and current is None:
            stream = sys.modules["torch"].cuda.current_stream(0).cuda_stream
        used = self._torch_binding.run(self._session, dict(zip(self._inputs, values)), outputs, stream)
        if used is None:
            raise InternalError("the PyTorch tensors just bound did not run")
        self._stream = used
        return outputs

    def _allocate(self, like):
        kind = type(like).__module__.split(".")[0]
        if kind == "torch":
            import torch
            if self._torch_outputs is None:
                self._torch_outputs = [(n, tuple(shape), getattr(torch, dtype))
                                       for n, dtype, shape in self.engine.outputs]
            return {n: torch.empty(shape, dtype=dt, device=like.device) for n, shape, dt in self._torch_outputs}
        if kind == "cupy":
            import cupy
            return {n: cupy.empty(tuple(shape), dtype=dtype) for n, dtype, shape in self.engine.outputs}
        raise UserError(f"CUDA feeds of type {type(like).__name__}: pass outputs={{name: CUDA array}} "
                        "(braze allocates outputs like PyTorch and CuPy arrays only)")


_KDL_CUDA = 2  # DLPack's device type of CUDA memory


def _on_cuda(x) -> bool:
    device = getattr(x, "__dlpack_device__", None)
    return device is not None and device()[0] == _KDL_CUDA


def _torch_tensor_type():
    torch = sys.modules.get("torch")
    return getattr(torch, "Tensor", None) if torch is not None else None


def _check_torch(t, name, what):
    """A UserError unless `t` is a dense PyTorch tensor on cuda:0."""
    torch = sys.modules["torch"]
    if type(t) is not torch.Tensor or not t.is_cuda:
        raise UserError(f"{what} {name!r} is not a PyTorch CUDA tensor as the first input is: give all on one side "
                        "(host arrays, or CUDA tensors)")
    if not t.is_contiguous():
        raise UserError(f"{what} {name!r} is not contiguous (call .contiguous() first)")
    if t.device.index not in (0, None):
        raise UserError(f"{what} {name!r} is on {t.device}; braze runs on cuda:0")


def _current_stream(like) -> int:
    kind = type(like).__module__.split(".")[0]
    if kind == "torch":
        import torch
        return torch.cuda.current_stream(like.device).cuda_stream
    if kind == "cupy":
        import cupy
        return cupy.cuda.get_current_stream().ptr
    return 0


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
