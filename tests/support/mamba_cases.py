"""A hybrid model's Mamba layers for the adapter tests: groups, copy-spec functions, fake states.

Shared by ``tests/adapters/test_mamba_copy.py`` and ``test_mamba_spec_decode.py``. The fake
states sit at addresses >= 2**63 (and one 8-byte block at 2**64 - 8); only their layout is
real (meta tensors, no memory).
"""

from __future__ import annotations

import torch

from devptr.adapters.mamba_copy import get_conv_copy_spec, get_temporal_copy_spec
from devptr.testing import SIGN_BIT_ADDR, SIGN_BIT_PLUS_42, TOP_ALIGNED, FakeState

GROUPS = [["attn.0"], ["mamba.0", "mamba.1"], ["conv.0"]]
"""KV-cache groups: an attention group, two Mamba layers, one conv-only layer."""
MAMBA_GROUPS = [1, 2]
FUNCS = {
    "mamba.0": (get_conv_copy_spec, get_temporal_copy_spec),
    "mamba.1": (get_conv_copy_spec, get_temporal_copy_spec),
    "conv.0": (get_conv_copy_spec,),
}
"""Per layer, the copy-spec function of each of its state tensors."""


def fake_context() -> dict[str, list[FakeState]]:
    """Per layer, its state tensors as :class:`devptr.testing.FakeState` at high addresses."""
    return {
        "mamba.0": [
            FakeState(SIGN_BIT_ADDR, (16, 4, 96), torch.bfloat16),
            FakeState(SIGN_BIT_PLUS_42, (16, 3, 5, 7), torch.uint8),
        ],
        "mamba.1": [
            FakeState(SIGN_BIT_ADDR + (1 << 30), (16, 4, 32), torch.float32),
            FakeState(SIGN_BIT_ADDR + (1 << 31), (16, 8, 64), torch.float16),
        ],
        "conv.0": [FakeState(TOP_ALIGNED, (1, 4, 2), torch.uint8)],  # one 8-byte block at 2**64-8
    }
