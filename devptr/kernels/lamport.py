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

import math
from typing import Final, Literal, Protocol

import torch

from devptr import InvalidValueError, LengthMismatchError, PtrTypeError, StateError
from devptr._core_api import IdentityCache, describe, positive_int
from devptr.kernels import _runtime
from devptr.kernels._errors import LamportTimeoutError as LamportTimeoutError  # exported here
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
    @property
    def poisoned(self) -> bool:
        """Whether a timeout poisoned the workspace, as far as the host knows without a
        device synchronisation."""
        ...


_KINDS: Final = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}
_PHASES: Final = {"both": (True, True), "write": (True, False), "reduce": (False, True)}

DEFAULT_TIMEOUT_S: Final = 10.0
"""How long (seconds, about) a call waits for a peer's data before it gives up."""

SPIN_SECONDS: Final = {"compiled": 5e-7, "interpreted": 1e-3}
"""The estimated cost of one re-read of a chunk, compiled (H200-class GPU) and under the
Triton interpreter, with which ``timeout`` becomes the kernel's re-read budget."""

_MAX_SPINS_LIMIT: Final = (1 << 31) - 1


def spins_for(timeout: float, interpreted: bool, programs: int) -> int:
    """The re-read budget per program for about ``timeout`` seconds of waiting.

    Compiled programs wait side by side; the interpreter runs them one after another, so
    there the budget is split between them.
    """
    per = SPIN_SECONDS["interpreted"] * programs if interpreted else SPIN_SECONDS["compiled"]
    return max(1, min(_MAX_SPINS_LIMIT, int(timeout / per)))


def _check_timeout(timeout: object) -> float:
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise PtrTypeError(f"timeout must be a number of seconds (got {describe(timeout)})")
    if not math.isfinite(timeout) or timeout <= 0:
        raise InvalidValueError(f"timeout must be a positive, finite number of seconds (got {timeout})")
    return float(timeout)

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
        "rank",
        "scalars",
        "sms",
        "table",
        "table_addr",
    )

    def __init__(self, ws: LamportTableOwner) -> None:
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
        max_spins: int | None,
        timeout: float,
        block: int | None,
        num_programs: int | None,
    ) -> _Call:
        """Check a call's dtype, size and knobs once, and keep what its launch needs."""
        spins_arg = max_spins
        kind = _KINDS.get(x.dtype)
        if kind is None:
            raise PtrTypeError(
                f"lamport_allreduce takes a float32, float16 or bfloat16 tensor (got {describe(x)})"
            )
        phases = _PHASES.get(phase)
        if phases is None:
            raise InvalidValueError(f"phase must be 'both', 'write' or 'reduce' (got {phase!r})")
        if max_spins is not None:
            positive_int(max_spins, "max_spins")
        seconds = _check_timeout(timeout)
        nbytes = x.numel() * x.element_size()
        if nbytes > self.max_bytes:
            raise InvalidValueError(
                f"x has {nbytes} bytes; this workspace's slots hold {self.max_bytes} "
                f"(comm_size {ws.layout.comm_size} for {ws.layout.world_size} ranks)"
            )
        n_words = -(-nbytes // 4)
        grid, blk, warps = self.config(max(n_words, 1), block, num_programs)
        if max_spins is None:
            max_spins = spins_for(seconds, self.device.type == "cpu", grid)
        write, reduce = phases
        meta = {**self.meta, "KIND": kind, "WRITE": write, "REDUCE": reduce, "BLOCK": blk}
        scalars = (self.rank, n_words, *self.scalars, max_spins)
        key = (self.key, kind, phase, blk, warps, arg_key(n_words), arg_key(max_spins))
        call = _Call(n_words, nbytes % 4 != 0, (grid, 1, 1), warps, meta, scalars, key)
        if len(self.calls) >= 256:
            self.calls.clear()
        self.calls[(x.dtype, x.shape, phase, spins_arg, timeout, block, num_programs)] = call
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


_PLANS: IdentityCache[object, _Plan] = IdentityCache()
"""Each workspace's plan, for as long as the workspace lives (the core's one cache policy)."""


def _new_plan(ws: object) -> _Plan:
    """Check a workspace seen for the first time and keep its plan while it lives.

    The lookup by identity (:data:`_PLANS`) is :func:`lamport_allreduce`'s own (its hot path)."""
    if not isinstance(getattr(type(ws), "layout", None), property) or not hasattr(type(ws), "closed"):
        raise PtrTypeError(f"workspace must be a LamportWorkspace (got {describe(ws)})")
    owner: LamportTableOwner = ws  # type: ignore[assignment]
    return _PLANS.put(ws, _Plan(owner))


def lamport_allreduce(
    x: torch.Tensor,
    workspace: LamportTableOwner,
    *,
    out: torch.Tensor | None = None,
    phase: Literal["both", "write", "reduce"] = "both",
    timeout: float = DEFAULT_TIMEOUT_S,
    max_spins: int | None = None,
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
    timeout
        Seconds (about: :data:`SPIN_SECONDS` converts them into re-reads) a call waits for
        its peers' data; default :data:`DEFAULT_TIMEOUT_S` (10 s). Raise it where ranks can
        be late by more (a cold compile cache on one rank at the first call). When it runs
        out the kernel writes NaN for what it could not sum, sets the timeout flag and
        poisons the workspace on every rank (see Notes).
    max_spins
        The re-read budget of each program itself, instead of ``timeout`` (tests).
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
    Faults: after a timeout (here or on any rank) the workspace is poisoned until it is
    rebuilt on every rank: :meth:`LamportWorkspace.check` raises
    :class:`LamportTimeoutError`, and so does every later call once the host knows (on
    the CPU at once; on a GPU once ``check()`` has seen it: until then a call on a
    poisoned workspace waits for nobody and writes NaN). No call returns a wrong sum
    without ``check()`` saying so.

    Memory: reads ``x``; writes this rank's slot of every rank's Lamport buffer, this
    rank's own previous round buffer, flag and layout buffers, and ``out``. A
    non-contiguous ``x``, or a 16-bit ``x`` with an odd number of elements, is first
    copied (padded to whole 32-bit words). Stream-ordered on the current stream; no host
    synchronisation, so calls can be captured in a CUDA graph.

    Host cost: the workspace is checked once, when first passed (its table, layout and
    device are kept, looked up by identity; closing it is still caught on every call), a
    call signature (dtype, shape, phase, knobs) once, and the compiled kernel is launched
    through the :class:`devptr.kernels._launch.Bound` kept for that signature and the 16-byte
    alignment of ``x`` and ``out`` (with a Triton release in
    :data:`devptr.kernels._launch.KNOWN_LAUNCHERS`, the launcher's C entry point itself). The
    per-call checks (tensor type, device, ``out``'s dtype, shape, device and contiguity,
    ``max_spins``, closed) stay. With ``out`` given, a call allocates nothing.
    """
    plan = _PLANS.get(workspace)
    if plan is None:
        plan = _new_plan(workspace)
    if workspace.closed:
        _PLANS.pop(workspace)
        workspace.workspace  # noqa: B018 -- raises the owner's own "closed" error
        raise StateError("this Lamport workspace is closed")
    if workspace.poisoned:
        raise LamportTimeoutError(
            f"rank {plan.rank}: this Lamport workspace is poisoned by an earlier timeout (a rank "
            "skipped a call, or sizes/dtypes differed between ranks); rebuild it on every rank"
        )
    if not isinstance(x, torch.Tensor):
        raise PtrTypeError(
            f"lamport_allreduce takes a float32, float16 or bfloat16 tensor (got {describe(x)})"
        )
    if max_spins is not None and type(max_spins) is not int:
        positive_int(max_spins, "max_spins")
    shape = x.shape
    call = plan.calls.get((x.dtype, shape, phase, max_spins, timeout, block, num_programs))
    if call is None:
        call = plan.prepare(x, workspace, phase, max_spins, timeout, block, num_programs)
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
