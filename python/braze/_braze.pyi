"""
braze: ONNX models compiled into fused CUDA kernels (the C++ API; use the braze package)
"""

from collections.abc import Mapping, Sequence
from typing import Annotated

from numpy.typing import NDArray


class Error(Exception):
    pass

class UserError(Error):
    pass

class DeviceError(Error):
    pass

class InternalError(Error):
    pass

class Engine:
    """A compiled model: immutable, shareable by threads."""

    @staticmethod
    def compile(path: str, shapes: Mapping[str, Sequence[int]] = {}, precision: str = 'fp32', fuse: bool = True, tune: bool = False, arch: str = '', use_cache: bool = True) -> Engine:
        """
        Compile the ONNX model at `path` (no GPU needed). shapes: {input: dims} for symbolic dims
        (others default to 1); precision: fp32, tf32, fp16 or bf16; fuse: False for one kernel a
        node; tune: time each kernel's candidates on the GPU; arch: sm_90a …, empty for this GPU's.
        """

    @staticmethod
    def compile_bytes(model: bytes, shapes: Mapping[str, Sequence[int]] = {}, precision: str = 'fp32', fuse: bool = True, tune: bool = False, arch: str = '', use_cache: bool = True, model_dir: str = '') -> Engine:
        """
        Compile a serialized ModelProto (external data, if any, read relative to model_dir).
        """

    @staticmethod
    def load(path: str) -> Engine:
        """Load an engine file written by save() or `braze compile`."""

    def save(self, path: str) -> None:
        """Write the engine file (kernels, weights, graph)."""

    @property
    def input_names(self) -> list[str]:
        """Input names, in the order run() takes them."""

    @property
    def output_names(self) -> list[str]:
        """Output names, in the order run() returns them."""

    @property
    def inputs(self) -> list[tuple[str, str, list[int]]]:
        """(name, dtype, shape) of each input."""

    @property
    def outputs(self) -> list[tuple[str, str, list[int]]]:
        """(name, dtype, shape) of each output."""

    @property
    def arch(self) -> str:
        """What the kernels were compiled for (sm_90a …)."""

    @property
    def precision(self) -> str:
        """The precision it was compiled at."""

    @property
    def kernels(self) -> int:
        """GPU kernels (groups on the CPU reference not counted)."""

    @property
    def notes(self) -> list[str]:
        """
        What the compile noted: dims defaulted, groups on the CPU reference, --tune without a GPU.
        """

class TorchBinding:
    """Session.run's last binding of PyTorch CUDA tensors."""

    def __init__(self, inputs: Sequence[str], outputs: Sequence[str]) -> None:
        """The engine's input and output names."""

    def keep(self, tensors: object, current_stream: object | None) -> None:
        """
        Keeps dense PyTorch CUDA tensors on cuda:0 (inputs then outputs) as the binding;
        current_stream: torch._C._cuda_getCurrentRawStream, or None.
        """

    def run(self, session: Session, feeds: object, outputs: object | None, stream: object | None) -> object:
        """
        Runs the session on the kept binding when the dicts hold it still (same addresses, dtypes,
        shapes, dense); returns the stream used, or None when they do not.
        """

class Session:
    """Runs an engine: on the GPU or the CPU reference."""

    def __init__(self, engine: Engine, backend: str = 'auto') -> None:
        """
        backend: auto (the GPU when there is one, else the CPU reference), gpu, reference, or
        emulator (the GPU path's kernels generated for the CPU: slow, no GPU needed).
        """

    @property
    def backend(self) -> str:
        """Where it runs: gpu, reference or emulator."""

    @property
    def notes(self) -> list[str]:
        """
        Kernels recompiled for this GPU, groups run on the CPU reference (emulator: after a run).
        """

    def run(self, inputs: Sequence[Annotated[NDArray, dict(order='C', device='cpu', writable=False)]]) -> list:
        """Input arrays in Engine.input_names order; returns the outputs' arrays."""

    def run_device(self, inputs: Sequence[Annotated[NDArray, dict(device='cuda')]], outputs: Sequence[Annotated[NDArray, dict(device='cuda')]], stream: int = 0) -> None:
        """
        CUDA arrays (DLPack), read and written in place, in Engine.input_names / output_names
        order; enqueued on `stream` (a cudaStream_t as an int; 0: the legacy default stream)
        without waiting. synchronize() waits and reports failed run-time checks.
        """

    def synchronize(self, stream: int = 0) -> None:
        """
        Wait for `stream`; raises UserError for a failed run-time check of a device run since the last call.
        """

def gpu_available() -> bool:
    """Whether a CUDA GPU and driver are present."""

def version() -> str:
    """braze's version."""
