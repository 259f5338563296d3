"""pytest plugin for the GPU half: vLLM's Mamba kernel tests without an installed vLLM.

The H200 has torch 2.11 and no vLLM (0.33.0 pins torch 2.14.0, and its ~90 dependencies
cannot travel there), so vLLM cannot be imported whole. This plugin, loaded with ``-p
pytest_vllm_stand_ins`` before collection, executes vLLM's own
``v1/worker/mamba_utils.py`` and ``model_executor/layers/mamba/mamba_utils.py`` from
``$DEVPTR_VLLM_TREE`` (shipped or migrated) with ``tests/support/vllm_stand_ins.py`` for the
configuration modules they import, and registers them, a CUDA ``current_platform`` and
``vllm.triton_utils`` in ``sys.modules``: ``tests/kernels/mamba/test_memcpy_u64_tiled.py``
and ``test_precopy_mamba_align.py`` then import them unchanged.
"""

from __future__ import annotations

import sys
import types

import triton
import triton.language as tl
from support.vllm_stand_ins import MAMBA_LAYER, MAMBA_WORKER, load_mamba_layer_utils, load_mamba_utils


class CudaPlatform:
    """``vllm.platforms.current_platform`` on a CUDA machine (what the tests ask of it)."""

    device_type = "cuda"
    device_name = "cuda"

    def is_cuda(self) -> bool:
        return True

    def is_cuda_alike(self) -> bool:
        return True

    def is_rocm(self) -> bool:
        return False

    def is_xpu(self) -> bool:
        return False


def _install(name: str, module: types.ModuleType) -> None:
    sys.modules[name] = module
    parts = name.split(".")
    for i in range(len(parts) - 1, 0, -1):
        parent = ".".join(parts[:i])
        pkg = sys.modules.get(parent)
        if pkg is None:
            pkg = types.ModuleType(parent)
            pkg.__path__ = []
            sys.modules[parent] = pkg
        setattr(pkg, parts[i], sys.modules[".".join(parts[: i + 1])])


_install(MAMBA_LAYER, load_mamba_layer_utils())
_install(MAMBA_WORKER, load_mamba_utils())
_install("vllm.platforms", types.ModuleType("vllm.platforms"))
sys.modules["vllm.platforms"].current_platform = CudaPlatform()  # type: ignore[attr-defined]
_triton_utils = types.ModuleType("vllm.triton_utils")
_triton_utils.tl = tl  # type: ignore[attr-defined]
_triton_utils.triton = triton  # type: ignore[attr-defined]
_install("vllm.triton_utils", _triton_utils)
