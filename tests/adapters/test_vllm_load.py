"""support.vllm_load imports one vLLM 0.33.0 file unmodified, with stand-ins, and cleans up."""

from __future__ import annotations

import sys

import pytest
from support.vllm_load import VllmRefError, load_vllm_module, vllm_source_root

pytestmark = pytest.mark.vllm  # needs vLLM 0.33.0's sources (support.opt_in)

_EC = "vllm.distributed.ec_transfer.ec_connector.cpu.worker.descriptor_buffers"


class _Platform:
    device_type = "cuda"

    def is_xpu(self) -> bool:
        return False


def test_loads_real_file_with_stand_ins_and_restores_sys_modules() -> None:
    before = {n for n in sys.modules if n == "vllm" or n.startswith("vllm.")}
    platform = _Platform()
    mod = load_vllm_module(_EC, {"vllm.platforms": {"current_platform": platform}})
    assert mod.__file__ is not None
    assert mod.__file__.startswith(str(vllm_source_root()))
    assert mod.current_platform is platform  # the stand-in was what it imported
    assert hasattr(mod, "DescriptorBuffers")
    after = {n for n in sys.modules if n == "vllm" or n.startswith("vllm.")}
    assert after == before


def test_missing_stand_in_is_named() -> None:
    with pytest.raises(VllmRefError, match="stand-in"):
        load_vllm_module(_EC)


def test_unknown_module_is_an_error() -> None:
    with pytest.raises(VllmRefError, match="no vLLM source file"):
        load_vllm_module("vllm.no_such_module_here")
