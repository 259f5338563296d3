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

import weakref
from typing import Final, Literal, Protocol

import torch

from devptr._convert import positive_int
from devptr._errors import InvalidValueError, LengthMismatchError, PtrTypeError, StateError, describe
from devptr.kernels import _runtime
from devptr.kernels._lamport_layout import LamportLayout
from devptr.kernels._launch import Bound, FastKernel, arg_key


class LamportTableOwner(Protocol):
    """What the kernel reads from a workspace (:class:`devptr.adapters.lamport.LamportWorkspace`).

    The table layout is :class:`LamportLayout`, declared in :mod:`devptr.kernels._lamport_layout`
    (the kernel's ABI); the adapter builds a table in that layout. ``workspace`` raises once
    the owner is ``closed``.
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
    @property
    def closed(self) -> bool: ...


_KINDS: Final = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}
_PHASES: Final = {"both": (True, True), "write": (True, False), "reduce": (False, True)}

DEFAULT_MAX_SPINS: Final = 1 << 24
"""Re-reads of one chunk of one slot before a kernel gives up (seconds on a GPU)."""

_KERNEL: Final = FastKernel("_lamport_jit", "_lamport_allreduce_kernel")


def _warps(block: int) -> int:
    """Warps for a chunk of ``block`` words: four words (one 16-byte access) per thread."""
    return min(8, max(1, block // 128))


def _block_for(n_words: int, programs: int) -> tuple[int, int]:
    """(BLOCK, num_warps): about one chunk per multiprocessor, 128..4096 words a chunk.

    Small messages get one-warp chunks of 128 words spread over more programs: under CUDA
    graphs on 2 x H200 that took 3.45-3.55 us at 4 KiB against 3.65-3.75 us with 256-word
    chunks (``benchmarks/results/lamport.md``, launch configuration sweep).
    """
    per = -(-n_words // max(programs, 1))
    block = 128
    while block < per and block < 4096:
        block *= 2
    return block, _warps(block)


class _Call:
    """One call signature of a workspace (dtype, shape, phase, knobs), checked once."""

    __slots__ = ("bound", "grid", "key", "meta", "n_words", "odd", "reduce", "scalars", "warps")

    def __init__(
        self,
        n_words: int,
        odd: bool,
        grid: tuple[int, int, int],
        warps: int,
        meta: dict[str, int | bool],
        scalars: tuple[int, ...],
        key: tuple[object, ...],
    ) -> None:
        self.n_words = n_words
        self.odd = odd
        self.grid = grid
        self.warps = warps
        self.meta = meta
        self.scalars = scalars
        self.key = key
        self.reduce = bool(meta["REDUCE"])
        self.bound: list[Bound | None] = [None, None, None, None]
        """The direct launch per 16-byte alignment of (x, out): index ``xa | oa << 1``."""


class _Plan:
    """What one workspace contributes to every launch, checked once when first seen.

    Holds the device table (a view the workspace owns), the layout constexprs and the
    launch configurations already derived (by words, block, programs). Looked up by the
    workspace's identity, and dropped when the workspace is garbage-collected.
    """

    __slots__ = (
        "calls",
        "configs",
        "device",
        "index",
        "is_cuda",
        "key",
        "max_bytes",
        "meta",
        "owner",
        "rank",
        "scalars",
        "sms",
        "table",
        "table_addr",
    )

    def __init__(self, ws: LamportTableOwner) -> None:
        self.owner = weakref.ref(ws)
        self.table = ws.workspace  # raises when closed
        self.table_addr = self.table.data_ptr()
        dev = ws.device
        self.device = dev
        self.index = dev.index
        self.is_cuda = dev.type == "cuda"
        layout = ws.layout
        self.rank = ws.rank
        self.max_bytes = ws.max_message_bytes
        self.meta = layout.kernel_constants()
        self.scalars = (layout.comm_size // 4, layout.slot_bytes // 4)
        self.sms = _runtime.multiprocessor_count(dev)
        self.configs: dict[tuple[int, int | None, int | None], tuple[int, int, int]] = {}
        self.calls: dict[tuple[object, ...], _Call] = {}
        self.key = (  # what this workspace adds to the launch signature
            dev.type,
            dev.index,
            tuple(self.meta.items()),
            arg_key(self.table),
            *(arg_key(v) for v in (self.rank, *self.scalars)),
        )

    def elsewhere(self, t: torch.Tensor) -> bool:
        """Whether ``t`` is not on the workspace's device (on CUDA without making device
        objects: ``get_device()`` is the index of a CUDA tensor)."""
        if self.is_cuda:
            return not t.is_cuda or t.get_device() != self.index
        return t.device != self.device

    def prepare(
        self,
        x: torch.Tensor,
        ws: LamportTableOwner,
        phase: str,
        max_spins: int,
        block: int | None,
        num_programs: int | None,
    ) -> _Call:
        """Check a call's dtype, size and knobs once, and keep what its launch needs."""
        kind = _KINDS.get(x.dtype)
        if kind is None:
            raise PtrTypeError(
                f"lamport_allreduce takes a float32, float16 or bfloat16 tensor (got {describe(x)})"
            )
        phases = _PHASES.get(phase)
        if phases is None:
            raise InvalidValueError(f"phase must be 'both', 'write' or 'reduce' (got {phase!r})")
        positive_int(max_spins, "max_spins")
        nbytes = x.numel() * x.element_size()
        if nbytes > self.max_bytes:
            raise InvalidValueError(
                f"x has {nbytes} bytes; this workspace's slots hold {self.max_bytes} "
                f"(comm_size {ws.layout.comm_size} for {ws.layout.world_size} ranks)"
            )
        n_words = -(-nbytes // 4)
        grid, blk, warps = self.config(max(n_words, 1), block, num_programs)
        write, reduce = phases
        meta = {**self.meta, "KIND": kind, "WRITE": write, "REDUCE": reduce, "BLOCK": blk}
        scalars = (self.rank, n_words, *self.scalars, max_spins)
        key = (self.key, kind, phase, blk, warps, arg_key(n_words), arg_key(max_spins))
        call = _Call(n_words, nbytes % 4 != 0, (grid, 1, 1), warps, meta, scalars, key)
        if len(self.calls) >= 256:
            self.calls.clear()
        self.calls[(x.dtype, x.shape, phase, max_spins, block, num_programs)] = call
        return call

    def config(self, n_words: int, block: int | None, num_programs: int | None) -> tuple[int, int, int]:
        """(grid, BLOCK, num_warps) for a message of ``n_words`` words, validated once."""
        key = (n_words, block, num_programs)
        got = self.configs.get(key)
        if got is not None:
            return got
        if block is None:
            blk, warps = _block_for(n_words, num_programs or self.sms)
        else:
            if positive_int(block, "block", 16) & (block - 1):
                raise InvalidValueError(f"block must be a power of two >= 16 (got {block})")
            blk, warps = block, _warps(block)
        # Programs loop over chunks, so any grid is correct (a larger previous round is
        # cleared in more steps); at most one program per multiprocessor keeps every
        # program resident, which a kernel that waits on its peers needs.
        grid = num_programs if num_programs is not None else min(-(-n_words // blk), self.sms)
        positive_int(grid, "num_programs")
        got = self.configs[key] = (grid, blk, warps)
        return got


_PLANS: dict[int, _Plan] = {}


def _new_plan(ws: object) -> _Plan:
    """Check a workspace seen for the first time (or whose id was reused) and keep its plan.

    The lookup by identity is :func:`lamport_allreduce`'s own (its hot path)."""
    if not isinstance(getattr(type(ws), "layout", None), property) or not hasattr(type(ws), "closed"):
        raise PtrTypeError(f"workspace must be a LamportWorkspace (got {describe(ws)})")
    owner: LamportTableOwner = ws  # type: ignore[assignment]
    plan = _Plan(owner)
    key = id(ws)
    weakref.finalize(ws, _PLANS.pop, key, None)
    _PLANS[key] = plan
    return plan


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

    Host cost: the workspace is checked once, when first passed (its table, layout and
    device are kept, looked up by identity; closing it is still caught on every call), a
    call signature (dtype, shape, phase, knobs) once, and the compiled kernel is launched
    through the :class:`devptr.kernels._launch.Bound` kept for that signature and the 16-byte
    alignment of ``x`` and ``out`` (on Triton 3.6, the launcher's C entry point itself). The
    per-call checks (tensor type, device, ``out``'s dtype, shape, device and contiguity,
    ``max_spins``, closed) stay. With ``out`` given, a call allocates nothing.
    """
    plan = _PLANS.get(id(workspace))
    if plan is None or plan.owner() is not workspace:
        plan = _new_plan(workspace)
    if workspace.closed:
        _PLANS.pop(id(workspace), None)
        workspace.workspace  # noqa: B018 -- raises the owner's own "closed" error
        raise StateError("this Lamport workspace is closed")
    if not isinstance(x, torch.Tensor):
        raise PtrTypeError(
            f"lamport_allreduce takes a float32, float16 or bfloat16 tensor (got {describe(x)})"
        )
    if type(max_spins) is not int:
        positive_int(max_spins, "max_spins")
    shape = x.shape
    call = plan.calls.get((x.dtype, shape, phase, max_spins, block, num_programs))
    if call is None:
        call = plan.prepare(x, workspace, phase, max_spins, block, num_programs)
    if plan.elsewhere(x):
        raise InvalidValueError(f"x is on {x.device}, the workspace on {plan.device}")
    contiguous = x.is_contiguous()
    if out is None:  # empty_like keeps a contiguous x's layout; its memory_format argument costs
        out = (
            torch.empty_like(x) if contiguous else torch.empty_like(x, memory_format=torch.contiguous_format)
        )
    elif out.dtype != x.dtype or out.shape != shape or plan.elsewhere(out):
        raise LengthMismatchError(
            f"out must match x: {tuple(x.shape)} {x.dtype} on {x.device} "
            f"(got {tuple(out.shape)} {out.dtype} on {out.device})"
        )
    elif not out.is_contiguous():
        raise InvalidValueError("out must be contiguous")
    if call.n_words == 0:
        return out

    src = x if contiguous else x.contiguous()
    dst = out
    xp, op = src.data_ptr(), dst.data_ptr()
    if call.odd or (xp | op) & 3:
        # 16-bit data of an odd length (or misaligned): go through padded word buffers.
        numel = x.numel()
        pad = (-numel) % (4 // x.element_size())
        src = torch.cat([src.view(-1), src.new_zeros(pad)])
        dst = torch.empty_like(src)
        xp, op = src.data_ptr(), dst.data_ptr()
    raw = (plan.table_addr, xp, op, *call.scalars)
    x16, o16 = not xp & 15, not op & 15  # 16-byte alignment: part of the launch signature
    slot = x16 | o16 << 1
    bound = call.bound[slot]
    if bound is None or not bound(call.grid, raw):
        key = (call.key, x16, o16)
        args = (plan.table, src, dst, *call.scalars)
        _KERNEL.launch(plan.device, call.grid, key, args, call.meta, call.warps, raw)
        call.bound[slot] = _KERNEL.bound(key)
    if dst is not out and call.reduce:
        out.view(-1).copy_(dst[: x.numel()])
    return out
