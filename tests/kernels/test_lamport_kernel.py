"""The Lamport all-reduce kernel under the Triton interpreter, N simulated ranks in one process.

Every rank's Lamport buffer is a host tensor (``local_group``); a round drives the write
phase of every rank, then the reduce phase of every rank (a waiting kernel cannot run
beside its peers in the interpreter). Runs compiled as well on a GPU, but is meant for
``TRITON_INTERPRET=1``.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("triton")

from devptr import Encoding, PtrTypeError
from devptr._errors import DevPtrError, InvalidValueError, LengthMismatchError
from devptr.adapters.lamport import (
    FLAG_ROUND,
    FLAG_TIMEOUT,
    SENTINEL_BITS,
    LamportTimeoutError,
    LamportWorkspace,
    WorkspaceClosedError,
    local_group,
)
from devptr.kernels import lamport_allreduce
from devptr.kernels._runtime import interpreting

pytestmark = pytest.mark.skipif(
    not interpreting() and not torch.cuda.is_available(),
    reason="needs TRITON_INTERPRET=1 (CPU) or a GPU",
)

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
TOL = {torch.float32: 1e-6, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}


def _device() -> str:
    return "cpu" if interpreting() else "cuda"


def _round(group: list[LamportWorkspace], xs: list[torch.Tensor], **kw: object) -> list[torch.Tensor]:
    """One all-reduce: write phase on every rank, then reduce phase on every rank."""
    outs = [torch.full(x.shape, float("nan"), dtype=x.dtype, device=x.device) for x in xs]
    for ws, x, out in zip(group, xs, outs, strict=True):
        lamport_allreduce(x, ws, out=out, phase="write", **kw)  # type: ignore[arg-type]
    for ws, x, out in zip(group, xs, outs, strict=True):
        lamport_allreduce(x, ws, out=out, phase="reduce", **kw)  # type: ignore[arg-type]
    return outs


def _rank_order_fp32(xs: list[torch.Tensor]) -> torch.Tensor:
    acc = torch.zeros_like(xs[0], dtype=torch.float32)
    for x in xs:
        acc = acc + x.float()
    return acc.to(xs[0].dtype)


def _words(buf: torch.Tensor) -> np.ndarray:
    return buf.view(torch.int32).cpu().numpy().view(np.uint32)


def _check_buffers(group: list[LamportWorkspace], k: int, n_words: int) -> None:
    """After round k on every rank: only buffer k % 3's first n_words per slot hold data."""
    lay = group[0].layout
    comm_w, slot_w = lay.comm_size // 4, lay.slot_bytes // 4
    for ws in group:
        buf = ws.lamport_buffer
        assert buf is not None
        words = _words(buf)
        data = np.zeros(words.shape, dtype=bool)
        b = k % 3
        for s in range(lay.world_size):
            start = b * comm_w + s * slot_w
            data[start : start + n_words] = True
        assert (words[data] != SENTINEL_BITS).all(), f"rank {ws.rank}: data missing in round {k}"
        stale = np.flatnonzero((words != SENTINEL_BITS) & ~data)
        assert stale.size == 0, f"rank {ws.rank}, round {k}: words {stale[:8]} not cleared"
        assert ws.flag_buffer.tolist() == [0, 0, (k + 1) % 3]
        assert ws.layout_buffer.tolist() == [4 * n_words, lay.comm_size]


@pytest.mark.parametrize("world", [2, 3, 4])
@pytest.mark.parametrize("dtype", DTYPES)
def test_rounds_match_float64_reference(world: int, dtype: torch.dtype) -> None:
    torch.manual_seed(world * 10 + DTYPES.index(dtype))
    group = local_group(world, world * 2048, device=_device())
    elem = torch.finfo(dtype).bits // 8
    # sizes change between rounds (shrinking ones leave more to clear than to read);
    # 7 rounds visit every round buffer twice
    sizes = [300, 17, 512 // elem, 1, 130, 2048 // elem, 64]
    for k, n in enumerate(sizes):
        xs = [torch.randn(n, device=_device()).to(dtype) for _ in range(world)]
        outs = _round(group, xs, block=64, num_programs=3)
        ref = sum(x.double() for x in xs)
        assert isinstance(ref, torch.Tensor)
        for r, out in enumerate(outs):
            assert torch.equal(out, outs[0]), f"rank {r} differs from rank 0 in round {k}"
            err = (out.double() - ref).abs().max().item()
            assert err <= TOL[dtype] * max(1.0, ref.abs().max().item()) * world, (k, r, err)
        # bit for bit: the float32 sum in rank order, rounded once to the dtype
        assert torch.equal(outs[0], _rank_order_fp32(xs)), f"round {k}"
        _check_buffers(group, k, -(-n * elem // 4))
    for ws in group:
        ws.check()
        ws.close()


def test_default_launch_and_both_table_encodings() -> None:
    """Default block/grid; the I64 and U64 tables drive the same kernel to the same sums."""
    results = {}
    for enc in (Encoding.I64, Encoding.U64):
        group = local_group(2, 2 * 4096, device=_device(), encoding=enc)
        assert group[0].workspace.dtype == enc.torch_dtype
        torch.manual_seed(7)
        xs = [torch.randn(1000, device=_device()) for _ in range(2)]
        results[enc] = _round(group, xs)
        assert torch.equal(results[enc][0], _rank_order_fp32(xs))
    assert torch.equal(results[Encoding.I64][1], results[Encoding.U64][1])


@pytest.mark.parametrize("dtype", DTYPES)
def test_negative_zero_never_reads_as_empty(dtype: torch.dtype) -> None:
    """-0.0 inputs (alone or in one half of a 16-bit pair) arrive, and sum to +0.0."""
    group = local_group(2, 2 * 1024, device=_device())
    a = torch.tensor([-0.0, 0.0, -0.0, -0.0, 1.0, -0.0], device=_device()).to(dtype)
    b = torch.tensor([-0.0, -0.0, 0.0, -0.0, -0.0, 2.0], device=_device()).to(dtype)
    outs = _round(group, [a, b], max_spins=4)
    for ws in group:
        ws.check()  # a word equal to the empty marker would have timed out
    expect = torch.tensor([0.0, 0.0, 0.0, 0.0, 1.0, 2.0]).to(dtype)
    for out in outs:
        assert torch.equal(out.cpu(), expect)
        assert not torch.signbit(out[:4]).any()


def test_stale_data_is_cleared_so_a_missing_peer_times_out() -> None:
    """Round 3 reuses round 0's buffer: without the clear, rank 1's round-0 data would pass
    for round-3 data. Rank 1 skips round 3; rank 0 must wait, run out of spins and say so."""
    group = local_group(2, 2 * 1024, device=_device())
    xs = [torch.ones(200, device=_device()), torch.full((200,), 2.0, device=_device())]
    for _ in range(3):
        _round(group, xs, block=64, num_programs=2)
    lamport_allreduce(xs[0], group[0], phase="write", block=64, num_programs=2)
    out = lamport_allreduce(xs[0], group[0], phase="reduce", max_spins=3, block=64, num_programs=2)
    assert group[0].flag_buffer[FLAG_TIMEOUT].item() == 1
    with pytest.raises(LamportTimeoutError, match="rank 0"):
        group[0].check()
    assert out.shape == xs[0].shape
    assert out.isnan().all()  # rank 1's slot never came: no element is a partial sum
    with pytest.raises(LamportTimeoutError, match="rank 1"):
        group[1].check()  # rank 1 never waited, but rank 0's timeout poisoned it too


def test_a_peer_that_is_late_is_waited_for() -> None:
    """The reduce phase only completes once the peer's write landed (no stale pass)."""
    group = local_group(2, 2 * 1024, device=_device())
    x0, x1 = torch.full((64,), 3.0, device=_device()), torch.full((64,), 4.0, device=_device())
    lamport_allreduce(x0, group[0], phase="write")
    lamport_allreduce(x1, group[1], phase="write")
    out0 = lamport_allreduce(x0, group[0], phase="reduce", max_spins=2)
    group[0].check()
    assert torch.equal(out0, torch.full_like(x0, 7.0))
    # rank 0 is one round ahead now: its next reduce must not see rank 1's old slot
    lamport_allreduce(x0, group[0], phase="write")
    assert group[0].flag_buffer[FLAG_ROUND].item() == 1
    assert group[1].flag_buffer[FLAG_ROUND].item() == 0
    out1 = lamport_allreduce(x1, group[1], phase="reduce", max_spins=2)
    group[1].check()
    assert torch.equal(out1, torch.full_like(x1, 7.0))
    lamport_allreduce(x1, group[1], phase="write")
    for ws, x in zip(group, (x0, x1), strict=True):
        out = lamport_allreduce(x, ws, phase="reduce", max_spins=2)
        ws.check()
        assert torch.equal(out, torch.full_like(x, 7.0))


def test_shapes_odd_lengths_and_views() -> None:
    group = local_group(2, 2 * 2048, device=_device())
    torch.manual_seed(3)
    base = [torch.randn(9, 7, device=_device()).to(torch.bfloat16) for _ in range(2)]
    xs = [b.t() for b in base]  # non-contiguous, 63 elements: an odd number of halves
    outs = _round(group, xs)
    assert outs[0].shape == (7, 9)
    assert torch.equal(outs[0], _rank_order_fp32([x.contiguous() for x in xs]))
    inplace = [x.contiguous() for x in xs]
    expect = _rank_order_fp32(inplace)
    for ws, x in zip(group, inplace, strict=True):
        lamport_allreduce(x, ws, out=x, phase="write")
    for ws, x in zip(group, inplace, strict=True):
        lamport_allreduce(x, ws, out=x, phase="reduce")
    assert torch.equal(inplace[0], expect) and torch.equal(inplace[1], expect)
    empty = torch.empty(0, device=_device())
    assert lamport_allreduce(empty, group[0]).numel() == 0


def test_launcher_validates_before_launching() -> None:
    group = local_group(2, 2 * 256, device=_device())
    ws = group[0]
    x = torch.ones(16, device=_device())
    with pytest.raises(PtrTypeError, match="float32, float16 or bfloat16"):
        lamport_allreduce(torch.ones(16, dtype=torch.int32), ws)
    with pytest.raises(PtrTypeError, match="LamportWorkspace"):
        lamport_allreduce(x, object())  # type: ignore[arg-type]
    with pytest.raises(InvalidValueError, match="slots hold 256"):
        lamport_allreduce(torch.ones(65, device=_device()), ws)
    with pytest.raises(LengthMismatchError, match="out must match"):
        lamport_allreduce(x, ws, out=torch.ones(8, device=_device()))
    with pytest.raises(InvalidValueError, match="phase"):
        lamport_allreduce(x, ws, phase="both-ish")  # type: ignore[arg-type]
    with pytest.raises(InvalidValueError, match="max_spins"):
        lamport_allreduce(x, ws, max_spins=0)
    with pytest.raises(PtrTypeError, match="max_spins"):
        lamport_allreduce(x, ws, max_spins=1.5)  # type: ignore[arg-type]
    with pytest.raises(InvalidValueError, match="block"):
        lamport_allreduce(x, ws, block=100)
    if interpreting():
        with pytest.raises(DevPtrError, match="is on"):
            lamport_allreduce(x.to(torch.float64).to(torch.float32).to("meta"), ws)
    assert ws.flag_buffer.tolist() == [0, 0, 0]  # nothing ran
    ws.close()
    with pytest.raises(WorkspaceClosedError):
        lamport_allreduce(x, ws)


def test_checks_still_run_once_a_call_is_remembered() -> None:
    """A call signature is checked once and remembered; the per-call checks stay."""
    group = local_group(2, 2 * 256, device=_device())
    ws = group[0]
    xs = [torch.full((16,), 1.0 + r, device=_device()) for r in range(2)]
    assert torch.equal(_round(group, xs)[0], torch.full((16,), 3.0, device=_device()))
    flag = ws.flag_buffer.tolist()
    x = xs[0]
    with pytest.raises(LengthMismatchError, match="out must match"):
        lamport_allreduce(x, ws, out=torch.ones(16, dtype=torch.float16, device=_device()))
    with pytest.raises(InvalidValueError, match="contiguous"):
        lamport_allreduce(x, ws, out=torch.ones(32, device=_device())[::2])
    with pytest.raises(PtrTypeError, match="max_spins"):
        lamport_allreduce(x, ws, max_spins=True)
    if interpreting():
        with pytest.raises(DevPtrError, match="is on"):
            lamport_allreduce(x.to("meta"), ws)
    assert ws.flag_buffer.tolist() == flag  # nothing ran
    for w in group:
        w.close()
    with pytest.raises(WorkspaceClosedError):
        lamport_allreduce(x, ws, phase="write")
    # a new workspace (perhaps at the same address) is checked afresh and sums its own data
    group2 = local_group(2, 2 * 512, device=_device())
    assert torch.equal(_round(group2, [x * 5, x * 7])[1], torch.full((16,), 12.0, device=_device()))


# -- issue 22 #8, #9: a bounded wait by default, and no wrong sum after a timeout ---------
def test_default_timeout_is_seconds_not_hours() -> None:
    """Default settings, a peer that never comes: the call gives up on its own (about
    DEFAULT_TIMEOUT_S; it used to spin 2**24 times per chunk: hours in the interpreter)."""
    import os
    import subprocess
    import sys

    code = """
import torch
from devptr.adapters.lamport import LamportTimeoutError, local_group
from devptr.kernels import lamport_allreduce
group = local_group(2, 2 * 1024, device="cpu" if torch.cuda.device_count() == 0 else "cuda")
x = torch.ones(200, device=group[0].device)
out = lamport_allreduce(x, group[0])  # rank 1 never calls
try:
    group[0].check()
except LamportTimeoutError:
    print("timed out", bool(out.isnan().all()))
"""
    env = {**os.environ, "TRITON_INTERPRET": os.environ.get("TRITON_INTERPRET", "1")}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "timed out True"


def test_timeout_argument_is_checked() -> None:
    from devptr.kernels.lamport import DEFAULT_TIMEOUT_S, spins_for

    ws = local_group(2, 2 * 1024, device=_device())[0]
    x = torch.ones(8, device=_device())
    for bad, err in ((0, InvalidValueError), (-1.0, InvalidValueError), (float("inf"), InvalidValueError),
                     (float("nan"), InvalidValueError), ("1", PtrTypeError), (True, PtrTypeError)):
        with pytest.raises(err, match="timeout"):
            lamport_allreduce(x, ws, timeout=bad)  # type: ignore[arg-type]
    ws.check()  # nothing launched
    assert DEFAULT_TIMEOUT_S <= 60
    assert spins_for(DEFAULT_TIMEOUT_S, True, 4) * 4 * 1e-3 == pytest.approx(DEFAULT_TIMEOUT_S, rel=0.01)


def test_after_a_timeout_every_rank_fails_until_rebuilt() -> None:
    """3 ranks (1 + 2 + 3 = 6). Rank 2 skips a call: rank 0 times out; from then on every
    call on every rank raises, check() raises on every rank, and nothing returned a wrong
    sum (before: rank 2 got 4.0 on its next call and its check() said ok)."""
    group = local_group(3, 3 * 1024, device=_device())
    xs = [torch.full((100,), float(r + 1), device=_device()) for r in range(3)]
    for out in _round(group, xs):
        assert torch.equal(out, torch.full_like(out, 6.0))
    for ws, x in zip(group[:2], xs[:2], strict=True):  # rank 2 skips this call
        lamport_allreduce(x, ws, phase="write")
    out0 = lamport_allreduce(xs[0], group[0], phase="reduce", max_spins=3)
    assert out0.isnan().all()
    for r, ws in enumerate(group):  # every rank, also the one that skipped and the one that waited less
        with pytest.raises(LamportTimeoutError, match=f"rank {r}"):
            ws.check()
        for phase in ("write", "reduce", "both"):
            with pytest.raises(LamportTimeoutError, match="poisoned"):
                lamport_allreduce(xs[r], ws, phase=phase)  # type: ignore[arg-type]
    rebuilt = local_group(3, 3 * 1024, device=_device())
    for out in _round(rebuilt, xs):
        assert torch.equal(out, torch.full_like(out, 6.0))
    for ws in rebuilt:
        ws.check()


class _HostDoesNotKnow(LamportWorkspace):
    """A workspace whose host has not synchronised yet (a GPU between a timeout and the
    next check()): the kernel itself must refuse to compute on a poisoned buffer."""

    @property
    def poisoned(self) -> bool:
        return False


def test_a_poisoned_workspace_waits_for_nobody_and_writes_nan() -> None:
    group = local_group(2, 2 * 1024, device=_device())
    for ws in group:
        ws.__class__ = _HostDoesNotKnow
    xs = [torch.ones(64, device=_device()), torch.full((64,), 2.0, device=_device())]
    _round(group, xs)
    lamport_allreduce(xs[0], group[0], phase="write")
    lamport_allreduce(xs[0], group[0], phase="reduce", max_spins=2)  # rank 1 skipped: poisons both
    for ws, x in zip(group, xs, strict=True):
        outs = [lamport_allreduce(x, ws, phase=p, max_spins=200) for p in ("write", "reduce")]
        assert outs[1].isnan().all()  # no wait and no sum (before: a partial sum after 200 re-reads)
        assert ws.flag_buffer[FLAG_TIMEOUT].item() == 1
        with pytest.raises(LamportTimeoutError):
            LamportWorkspace.check(ws)


_COMPILE = """
import sys
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from devptr.kernels import _lamport_jit as jit
from devptr.kernels._lamport_layout import LamportLayout

fn = jit._lamport_allreduce_kernel
meta = LamportLayout(2, 8192).kernel_constants()
sig = {"ws_ptr": "*i64", "x_ptr": "*fp32", "out_ptr": "*fp32", "rank": "i32", "n_words": "i32",
       "comm_words": "i32", "slot_words": "i32", "max_spins": "i32"}
for kind in (0, 1, 2):
    for write, reduce in ((True, True), (True, False), (False, True)):
        consts = dict(meta, KIND=kind, WRITE=write, REDUCE=reduce, BLOCK=256)
        src = ASTSource(
            fn=fn,
            signature={**sig, **{k: "constexpr" for k in consts}},
            constexprs={(fn.arg_names.index(k),): v for k, v in consts.items()},
        )
        assert "cubin" in triton.compile(src, target=GPUTarget("cuda", 90, 32)).asm
print("compiled")
"""


def test_kernel_compiles_for_a_gpu_without_one() -> None:
    """The interpreter runs the kernel as Python, so it does not see what only the compiler
    checks (one type per name across the branches of an ``if``...): compile every dtype and
    phase for sm_90 here (Triton's own ptxas, no GPU needed)."""
    import os
    import subprocess
    import sys

    pytest.importorskip("triton.backends.nvidia", reason="this Triton has no CUDA backend to compile for")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    proc = subprocess.run(
        [sys.executable, "-c", _COMPILE], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "compiled", proc.stderr[-3000:]
