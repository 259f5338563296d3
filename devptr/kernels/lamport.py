"""One-shot Lamport all-reduce in Triton, driven by a :class:`LamportWorkspace`.

Every rank writes its input into its slot of every rank's current round buffer (peers
first), then waits on its own round buffer until no slot holds the empty-slot word
(float32 negative zero), sums the slots in rank order (float32), and refills the
previous round's buffer with the empty word. No barrier: a slot is ready when its data is
there. The round's buffer index lives in the workspace's flag buffer on the device, so a
sequence of calls can be captured in a CUDA graph and replayed.

Triple buffering makes this safe: round k uses buffer ``k % 3``, and buffer
``(k - 1) % 3`` is cleared during round k. A rank in round k+2 (the next user of that
buffer) has seen this rank's round k+1 data, which this rank writes only after round k,
clear included, finished.
"""

from __future__ import annotations

from typing import Final, Literal, Protocol

import torch

from devptr._convert import positive_int
from devptr._errors import InvalidValueError, LengthMismatchError, PtrTypeError, describe
from devptr.kernels import _runtime
from devptr.kernels._lamport_layout import LamportLayout


class LamportTableOwner(Protocol):
    """What the kernel reads from a workspace (:class:`devptr.adapters.lamport.LamportWorkspace`).

    The table layout is :class:`LamportLayout`, declared in :mod:`devptr.kernels._lamport_layout`
    (the kernel's ABI); the adapter builds a table in that layout.
    """

    @property
    def workspace(self) -> torch.Tensor: ...
    @property
    def device(self) -> torch.device: ...
    @property
    def rank(self) -> int: ...
    @property
    def layout(self) -> LamportLayout: ...
    @property
    def max_message_bytes(self) -> int: ...

_KINDS: Final = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}
_PHASES: Final = {"both": (True, True), "write": (True, False), "reduce": (False, True)}

DEFAULT_MAX_SPINS: Final = 1 << 24
"""Re-reads of one chunk of one slot before a kernel gives up (seconds on a GPU)."""


def _warps(block: int) -> int:
    """Warps for a chunk of ``block`` words: four words (one 16-byte access) per thread."""
    return min(8, max(1, block // 128))


def _block_for(n_words: int, programs: int) -> tuple[int, int]:
    """(BLOCK, num_warps): about one chunk per multiprocessor, 256..4096 words a chunk."""
    per = -(-n_words // max(programs, 1))
    block = 256
    while block < per and block < 4096:
        block *= 2
    return block, _warps(block)


def _words(t: torch.Tensor) -> torch.Tensor:
    """A contiguous tensor's bytes as int32 words (zero-copy; 4-byte aligned)."""
    return t.view(-1).view(torch.int32)


def lamport_allreduce(
    x: torch.Tensor,
    workspace: LamportTableOwner,
    *,
    out: torch.Tensor | None = None,
    phase: Literal["both", "write", "reduce"] = "both",
    max_spins: int = DEFAULT_MAX_SPINS,
    block: int | None = None,
    num_programs: int | None = None,
) -> torch.Tensor:
    """Sum ``x`` over the workspace's ranks; every rank gets the same result.

    Parameters
    ----------
    x
        This rank's input: float32, float16 or bfloat16 on the workspace's device, at most
        ``workspace.max_message_bytes``. Every rank passes the same shape and dtype.
    workspace
        The open :class:`LamportWorkspace` of this rank (its table, flag and layout).
    out
        Where the sum goes (same shape and dtype as ``x``, contiguous); default: a new
        tensor. May be ``x`` itself.
    phase
        ``"both"`` (default) runs the whole round. ``"write"`` and ``"reduce"`` split it for
        simulated ranks in one process (``TRITON_INTERPRET=1``): run ``"write"`` for every
        rank, then ``"reduce"`` for every rank, since a waiting kernel cannot run beside
        the others there. ``"write"`` returns ``out`` unwritten.
    max_spins
        How often one chunk of one slot is re-read before the kernel gives up, records a
        timeout in the flag buffer and goes on; :meth:`LamportWorkspace.check` raises it.
    block, num_programs
        Words per chunk (a power of two) and programs; default: about one chunk per
        multiprocessor (programs are capped there, so every program is resident).

    Returns
    -------
    torch.Tensor
        ``out``: the sum in rank order, computed in float32 and rounded to ``x.dtype``.
        Negative zeros in the inputs count as +0.0 (the empty-slot marker is -0.0).

    Notes
    -----
    Memory: reads ``x``; writes this rank's slot of every rank's Lamport buffer, this
    rank's own previous round buffer, flag and layout buffers, and ``out``. A
    non-contiguous ``x``, or a 16-bit ``x`` with an odd number of elements, is first
    copied (padded to whole 32-bit words). Stream-ordered on the current stream; no host
    synchronisation, so calls can be captured in a CUDA graph.
    """
    kind = _KINDS.get(x.dtype) if isinstance(x, torch.Tensor) else None
    if kind is None:
        raise PtrTypeError(
            f"lamport_allreduce takes a float32, float16 or bfloat16 tensor (got {describe(x)})"
        )
    if not isinstance(getattr(type(workspace), "layout", None), property):
        raise PtrTypeError(f"workspace must be a LamportWorkspace (got {describe(workspace)})")
    if phase not in _PHASES:
        raise InvalidValueError(f"phase must be 'both', 'write' or 'reduce' (got {phase!r})")
    table = workspace.workspace  # raises WorkspaceClosedError when closed
    if x.device != workspace.device:
        raise InvalidValueError(f"x is on {x.device}, the workspace on {workspace.device}")
    nbytes = x.numel() * x.element_size()
    if nbytes > workspace.max_message_bytes:
        raise InvalidValueError(
            f"x has {nbytes} bytes; this workspace's slots hold {workspace.max_message_bytes} "
            f"(comm_size {workspace.layout.comm_size} for {workspace.layout.world_size} ranks)"
        )
    if out is None:
        out = torch.empty_like(x, memory_format=torch.contiguous_format)
    elif out.shape != x.shape or out.dtype != x.dtype or out.device != x.device:
        raise LengthMismatchError(
            f"out must match x: {tuple(x.shape)} {x.dtype} on {x.device} "
            f"(got {tuple(out.shape)} {out.dtype} on {out.device})"
        )
    elif not out.is_contiguous():
        raise InvalidValueError("out must be contiguous")
    positive_int(max_spins, "max_spins")
    if x.numel() == 0:
        return out

    src = x if x.is_contiguous() else x.contiguous()
    dst = out
    if nbytes % 4 or src.data_ptr() % 4 or out.data_ptr() % 4:
        # 16-bit data of an odd length (or misaligned): go through padded word buffers.
        pad = (-x.numel()) % (4 // x.element_size())
        src = torch.cat([src.view(-1), src.new_zeros(pad)])
        dst = torch.empty_like(src)
    xw, ow = _words(src), _words(dst)
    n_words = xw.numel()

    dev = workspace.device
    jit = _runtime.jit_module("_lamport_jit")
    _runtime.check_launch_device(dev, jit)
    sms = _runtime.multiprocessor_count(dev)
    if block is None:
        blk, warps = _block_for(n_words, num_programs or sms)
    else:
        if positive_int(block, "block", 16) & (block - 1):
            raise InvalidValueError(f"block must be a power of two >= 16 (got {block})")
        blk, warps = block, _warps(block)
    chunks = -(-n_words // blk)
    layout = workspace.layout
    # Programs loop over chunks, so any grid is correct (a larger previous round is cleared
    # in more steps); at most one program per multiprocessor keeps every program resident,
    # which a kernel that waits on its peers needs.
    grid = num_programs if num_programs is not None else min(chunks, sms)
    positive_int(grid, "num_programs")
    write, reduce = _PHASES[phase]
    with _runtime.on_device(dev):
        jit._lamport_allreduce_kernel[(grid,)](
            table,
            xw,
            ow,
            workspace.rank,
            n_words,
            layout.comm_size // 4,
            layout.slot_bytes // 4,
            max_spins,
            WORLD=layout.world_size,
            KIND=_KINDS[x.dtype],
            WRITE=write,
            REDUCE=reduce,
            BLOCK=blk,
            num_warps=warps,
        )
    if dst is not out and reduce:
        out.view(-1).copy_(dst[: x.numel()])
    return out
