"""Locate (or fetch) vLLM 0.33.0's sources for benchmarks: see :mod:`tools.vllm_ref`."""

from __future__ import annotations

from tools.vllm_ref import VLLM_VERSION, is_complete
from tools.vllm_ref import vllm_source_root as vllm_source_tree

__all__ = ["VLLM_VERSION", "is_complete", "vllm_source_tree"]

if __name__ == "__main__":
    print(vllm_source_tree())
