"""Shared Triton kernels that consume devptr tables.

- :func:`batch_memcpy`: copy many byte segments (memmove semantics per segment).
- :func:`batch_memcpy_table`: the same, from one PtrTable of :data:`SEGMENT_COLUMNS` (one upload).
- :func:`batch_memcpy_columns`: the same, from column views a caller built and checked (O(1) checks).
- :func:`memmove_kinds`: the per-segment copy decision alone (no memory is touched).
- :func:`copy_state_blocks`: Mamba state-block copies driven by block tables
  (:func:`state_copy_config`: its launch knobs for a batch;
  :func:`state_copy_plan` / :func:`copy_state_blocks_planned`: the same copies from a
  precomputed list of busy programs, faster).
- :class:`SizeBuffer`: host/device byte counts, the partner of two PtrBuffers.

Importing this package does not import Triton; the first launch does, and raises
:class:`TritonUnavailableError` when it is missing. Set ``TRITON_INTERPRET=1`` before the
first launch to run the kernels on the CPU (tables and memory on the CPU).
"""

from devptr import SizeBuffer
from devptr.kernels._addr_arg import addr_arg, addr_jit, compiled_variants, specialization_key
from devptr.kernels._errors import AddrParamError, TritonUnavailableError
from devptr.kernels._launch import DirectLaunchWarning
from devptr.kernels._memcpy import (
    SEGMENT_COLUMNS,
    MemmoveKind,
    batch_memcpy,
    batch_memcpy_columns,
    batch_memcpy_table,
    memmove_kinds,
)
from devptr.kernels._state_copy import (
    STATE_META_COLUMNS,
    StateCopyConfig,
    StateCopyPlan,
    StateMeta,
    copy_state_blocks,
    copy_state_blocks_planned,
    state_copy_config,
    state_copy_plan,
)
from devptr.kernels.lamport import LamportTableOwner, lamport_allreduce

__all__ = [
    "SEGMENT_COLUMNS",
    "STATE_META_COLUMNS",
    "AddrParamError",
    "DirectLaunchWarning",
    "LamportTableOwner",
    "MemmoveKind",
    "SizeBuffer",
    "StateCopyConfig",
    "StateCopyPlan",
    "StateMeta",
    "TritonUnavailableError",
    "addr_arg",
    "addr_jit",
    "batch_memcpy",
    "batch_memcpy_columns",
    "batch_memcpy_table",
    "compiled_variants",
    "copy_state_blocks",
    "copy_state_blocks_planned",
    "lamport_allreduce",
    "memmove_kinds",
    "specialization_key",
    "state_copy_config",
    "state_copy_plan",
]
