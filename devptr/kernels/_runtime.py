"""Where kernels run: lazy Triton import, interpreter detection, device facts.

Nothing here imports Triton at module import time: ``import devptr.kernels`` works without
Triton, and the first kernel launch raises :class:`TritonUnavailableError` if it is missing.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
from types import ModuleType

import torch

from devptr import StateError
from devptr.kernels._errors import TritonUnavailableError

INTERPRET_ENV = "TRITON_INTERPRET"
_interpreted: dict[str, bool] = {}


def interpreting() -> bool:
    """Whether Triton kernels run under the interpreter (``TRITON_INTERPRET=1``)."""
    return os.environ.get(INTERPRET_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


def jit_module(name: str) -> ModuleType:
    """Import ``devptr.kernels.<name>`` (a module that defines ``@triton.jit`` kernels).

    The interpreter choice is fixed when a kernel module is first imported: set
    ``TRITON_INTERPRET=1`` before the first launch to run kernels on the CPU.
    """
    try:
        import triton  # noqa: F401
    except ImportError as exc:
        raise TritonUnavailableError(
            "devptr.kernels needs Triton (pip install 'triton>=3.6,<3.10', devptr's kernels extra); "
            f"importing it failed: {exc}"
        ) from None
    mod = importlib.import_module(f"devptr.kernels.{name}")
    _interpreted.setdefault(mod.__name__, interpreting())  # what Triton's jit decided at import
    return mod


@functools.lru_cache(maxsize=16)
def multiprocessor_count(device: torch.device) -> int:
    """Streaming multiprocessors (compute units) of ``device``; 4 for the CPU interpreter."""
    if device.type == "cuda":
        return int(torch.cuda.get_device_properties(device).multi_processor_count)
    if device.type == "xpu":  # pragma: no cover - no XPU in CI
        props = torch.xpu.get_device_properties(device)
        return int(getattr(props, "gpu_subslice_count", 64))
    return 4


def check_launch_device(device: torch.device, jit: ModuleType | None = None) -> None:
    """Raise unless kernels (of module ``jit``, when given) can run with tables on ``device``."""
    interpreted = interpreting() if jit is None else _interpreted.get(jit.__name__, False)
    if device.type == "cpu" and not interpreted:
        raise StateError(
            "the tables are on the CPU: copy them to the device first (PtrBuffer.to_device), "
            f"or set {INTERPRET_ENV}=1 before the first launch to run kernels on the CPU"
        )


def on_device(device: torch.device) -> contextlib.AbstractContextManager[object]:
    """Make ``device`` current for a launch (Triton launches on the current CUDA device)."""
    if device.type == "cuda":
        return torch.cuda.device(device)
    return contextlib.nullcontext()
