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
    def compile(path: str, shapes: Mapping[str, Sequence[int]] = {}, precision: str = 'fp32', fuse: bool = True, tune: bool = False, arch: str = '', use_cache: bool = True) -> Engine: ...

    @staticmethod
    def load(path: str) -> Engine: ...

    def save(self, path: str) -> None: ...

    @property
    def input_names(self) -> list[str]: ...

    @property
    def output_names(self) -> list[str]: ...

    @property
    def inputs(self) -> list[tuple[str, str, list[int]]]: ...

    @property
    def outputs(self) -> list[tuple[str, str, list[int]]]: ...

    @property
    def arch(self) -> str: ...

    @property
    def precision(self) -> str: ...

    @property
    def kernels(self) -> int: ...

    @property
    def notes(self) -> list[str]: ...

class Session:
    """Runs an engine: on the GPU or the CPU reference."""

    def __init__(self, engine: Engine, backend: str = 'auto') -> None: ...

    @property
    def backend(self) -> str: ...

    def run(self, inputs: Sequence[Annotated[NDArray, dict(order='C', device='cpu', writable=False)]]) -> list:
        """Input arrays in Engine.input_names order; returns the outputs' arrays."""

def gpu_available() -> bool: ...

def version() -> str: ...
