"""The RFC's "alternatives considered", each executed on the installed torch/numpy.

Every alternative runs the same steps an engine needs (build a table, update an entry,
compute strided slot addresses, hand the table to each consumer) on addresses >= 2**63
(Intel XPU-like). A cell is what happened: ``ok``, the real exception, or the wrong value.
Costs are timed separately (:func:`cost_rows`) with CUDA-like addresses, which every
alternative accepts, so that the numbers compare the same work.

The ``# devptr: ignore[...]`` comments in this module are deliberate: alternatives A-D are
the spellings the convention replaces, executed here as the RFC's evidence.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Final

import attrs
import numpy as np
import numpy.typing as npt
import torch

from benchmarks._harness import host
from devptr import DevicePtr, Encoding, PtrBuffer, store
from devptr.demo.traps import HI, NEG
from devptr.testing import HIGH_ADDRESSES, TOP_ALIGNED, FakeTensor
from devptr.vendor import ptrtable as vp
from tools.report.traps import custom_op_int, error_cell

ADDRS: Final[tuple[int, ...]] = (HI, *HIGH_ADDRESSES[:3])
"""The table every alternative builds: four addresses with bit 63 set."""
STRIDE: Final = 0x20_0000
IDX: Final[tuple[int, ...]] = (0, 3, 7, 1)
LOW_CMP: Final = 0x7FFF_FFFF_F000
"""Below 2**63: ``LOW_CMP < HI`` is true for addresses, false for signed int64 values."""

OVERFLOW_STEP: Final = "overflow past 2**64"
"""The step where raising (an OverflowError) is the right outcome."""

COMPARE_STEP: Final = "Triton `a < b`"
"""Every alternative's table goes through the same R6 kernel (bitcast to uint64, then compare)."""

Cell = str


def _to_i64(x: int) -> int:
    """The two's-complement rewrite engines use today (vLLM ``_reinterpret_u64_as_i64``)."""
    return x - (1 << 64) if x >= (1 << 63) else x  # devptr: ignore[DP004]


def _bits_all(t: torch.Tensor | npt.NDArray[Any]) -> list[int]:
    arr = t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else t
    return [int(v) for v in np.ascontiguousarray(arr).reshape(-1).view(np.uint64)]


def _expect(t: torch.Tensor | npt.NDArray[Any], want: Sequence[int]) -> Cell:
    got = _bits_all(t)[: len(want)]
    if got == list(want):
        return "ok"
    bad = next(g for g, w in zip(got, want, strict=False) if g != w)
    return f"wrong bits {bad:#x}"


def _run(fn: Callable[[], Cell], *, raising_is_ok: bool = False) -> Cell:
    try:
        return fn()
    except OverflowError as exc:
        return f"ok, caught: {error_cell(exc)}" if raising_is_ok else error_cell(exc)
    except Exception as exc:  # the point is to show the real error
        return error_cell(exc)


# -- consumers ----------------------------------------------------------------------------
def cpp_op_cell(table: torch.Tensor, needs: torch.dtype) -> Cell:
    """A C++ op's dtype contract (vLLM ``swap_blocks_batch``: int64 on CUDA/ROCm, uint64 on XPU)."""
    if table.dtype != needs:
        other = "torch.int64" if needs == torch.int64 else "torch.uint64"
        return f"rejected: table is {table.dtype}, op needs {other}"
    return _expect(table, ADDRS[: min(len(ADDRS), table.numel())])


_KERNEL: dict[str, Any] = {}


@contextlib.contextmanager
def _interpreted() -> Iterator[None]:
    """``TRITON_INTERPRET=1`` for the duration (Triton reads it at definition and launch)."""
    old = os.environ.get("TRITON_INTERPRET")
    os.environ["TRITON_INTERPRET"] = "1"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("TRITON_INTERPRET", None)
        else:
            os.environ["TRITON_INTERPRET"] = old


def use_gpu() -> bool:
    """Compile on the GPU when one is present and the interpreter was not asked for."""
    return torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET", "0") not in ("1", "true")


def triton_mode() -> str:
    """How :func:`triton_lt` runs here: ``interpreter`` or ``compiled on <GPU name>``."""
    return f"compiled on {torch.cuda.get_device_name()}" if use_gpu() else "interpreter"


def _lt_kernel(mode: str) -> Any:
    """A Triton kernel storing ``tab[0] < tab[1]`` as vLLM's overlap checks do (no bitcast).

    Defined once per ``mode`` (``"interpreter"``/``"gpu"``): Triton decides at definition
    time whether a function is interpreted.
    """
    if mode in _KERNEL:
        return _KERNEL[mode]
    import triton
    import triton.language as tl

    @triton.jit  # type: ignore[untyped-decorator]
    def _lt(tab_ptr, out_ptr, BITCAST: tl.constexpr):  # type: ignore[no-untyped-def]
        # no annotations on tensor parameters: Triton reads them as specialisation hints
        a = tl.load(tab_ptr)
        b = tl.load(tab_ptr + 1)
        if BITCAST:
            a = a.to(tl.uint64, bitcast=True)
            b = b.to(tl.uint64, bitcast=True)
        tl.store(out_ptr, (a < b).to(tl.int32))

    _KERNEL[mode] = _lt
    return _lt


def triton_lt(table: torch.Tensor, *, bitcast: bool = False) -> Cell:
    """Run the compare kernel on a 2-entry table [LOW_CMP, HI].

    Compiled on the GPU when one is present (:func:`use_gpu`), else in Triton's interpreter
    on the CPU.
    """
    try:
        if use_gpu():
            kernel = _lt_kernel("gpu")
            out = torch.zeros(1, dtype=torch.int32, device="cuda")
            kernel[(1,)](table.to("cuda"), out, BITCAST=bitcast)
            got = int(out.cpu()[0])
        else:
            with _interpreted():
                kernel = _lt_kernel("interpreter")
                out = torch.zeros(1, dtype=torch.int32)
                kernel[(1,)](table.cpu(), out, BITCAST=bitcast)
                got = int(out[0])
    except ImportError:
        return "triton not installed"
    return "ok" if got == 1 else f"wrong: {LOW_CMP:#x} < HI is false (signed compare)"


def _cmp_table_u64() -> torch.Tensor:
    return torch.tensor([LOW_CMP, HI], dtype=torch.uint64)


def custom_op_cell(value: int) -> Cell:
    return _expect(custom_op_int(value), [HI])


# -- the alternatives ---------------------------------------------------------------------
@attrs.frozen
class Row:
    """One step of one alternative: its code and what running it gives.

    ``low`` runs the same code with CUDA-like addresses (below 2**47): given for a row that
    spells a CUDA/ROCm branch, so that a failure seen only with an address >= 2**63 (which
    CUDA never hands out) is reported as fixture-only instead of as a failure.
    """

    step: str
    code: str
    run: Callable[[], Cell]
    low: Callable[[], Cell] | None = None


FIXTURE_ONLY: Final = "fixture-only"
"""Prefix of a cell whose failure needs an address >= 2**63 on a branch that never sees one."""


def r6_compare(table: torch.Tensor) -> Cell:
    """The compare step, the same for every alternative: R6's kernel (bitcast, then ``<``)."""
    return triton_lt(table, bitcast=True)


def _twos() -> list[Row]:
    def tab() -> torch.Tensor:
        return torch.tensor([_to_i64(a) for a in ADDRS], dtype=torch.int64)  # devptr: ignore[DP002]

    def update() -> Cell:
        t = torch.zeros(4, dtype=torch.int64)
        t[2] = _to_i64(HI)  # devptr: ignore[DP001]
        return _expect(t[2:3], [HI])

    def strided() -> Cell:
        base = torch.tensor([_to_i64(HI)], dtype=torch.int64)  # devptr: ignore[DP002]
        t = base + torch.tensor(IDX) * STRIDE
        return _expect(t, [HI + i * STRIDE for i in IDX])

    def overflow() -> Cell:
        base = torch.tensor([_to_i64(TOP_ALIGNED)], dtype=torch.int64)  # devptr: ignore[DP002]
        t = base + torch.tensor([1]) * 16
        return f"not caught: wraps to {_bits_all(t)[0]:#x}"

    def signed_in() -> Cell:
        t = torch.zeros(1, dtype=torch.int64)
        t[0] = _to_i64(NEG)  # devptr: ignore[DP001]
        return _expect(t, [HI])

    def mixed() -> Cell:
        t = torch.tensor([[_to_i64(HI), 4096]], dtype=torch.int64)  # devptr: ignore[DP002]
        return _expect(t, [HI, 4096])

    def cmp() -> torch.Tensor:
        return torch.tensor([_to_i64(LOW_CMP), _to_i64(HI)], dtype=torch.int64)  # devptr: ignore[DP002]

    return [
        Row(
            "build",
            "`torch.tensor([to_i64(p) for p in ptrs], dtype=torch.int64)`",
            lambda: _expect(tab(), ADDRS),
        ),
        Row("update one entry", "`t[k] = to_i64(p)`", update),
        Row("strided slots", "`t_base + idx * stride` (int64 torch)", strided),
        Row(OVERFLOW_STEP, "`to_i64(2**64 - 8) + 16`", overflow),
        Row("address given signed", "`t[k] = to_i64(p - 2**64)`", signed_in),
        Row("rows (ptr, nbytes)", "`torch.tensor([[to_i64(p), n]], dtype=torch.int64)`", mixed),
        Row("CUDA/ROCm C++ op", "pass `t` (int64)", lambda: cpp_op_cell(tab(), torch.int64)),
        Row("XPU C++ op", "pass `t` (int64)", lambda: cpp_op_cell(tab(), torch.uint64)),
        Row(COMPARE_STEP, "int64 table; R6 kernel", lambda: r6_compare(cmp())),
        Row("custom-op `int` arg", "`t[k].item()`", lambda: custom_op_cell(int(tab()[0].item()))),
    ]


def _u64_setitem() -> list[Row]:
    def tab() -> torch.Tensor:
        return torch.tensor(list(ADDRS), dtype=torch.uint64)  # devptr: ignore[DP006]

    def update() -> Cell:
        u = torch.zeros(4, dtype=torch.uint64)
        u[2] = HI
        return _expect(u[2:3], [HI])

    def strided() -> Cell:
        u = torch.tensor([HI], dtype=torch.uint64) + torch.tensor(IDX, dtype=torch.uint64) * STRIDE
        return _expect(u, [HI + i * STRIDE for i in IDX])

    def overflow() -> Cell:
        u = torch.tensor([TOP_ALIGNED], dtype=torch.uint64) + torch.tensor([16], dtype=torch.uint64)
        return f"not caught: wraps to {_bits_all(u)[0]:#x}"

    def signed_in() -> Cell:
        u = torch.zeros(1, dtype=torch.uint64)
        u[0] = NEG
        return _expect(u, [HI])

    def mixed() -> Cell:
        return _expect(torch.tensor([[HI, 4096]], dtype=torch.uint64), [HI, 4096])

    return [
        Row("build", "`torch.tensor(ptrs, dtype=torch.uint64)`", lambda: _expect(tab(), ADDRS)),
        Row("update one entry", "`u[k] = p`", update),
        Row("strided slots", "`u_base + idx * stride` (uint64 torch)", strided),
        Row(OVERFLOW_STEP, "`u(2**64 - 8) + 16`", overflow),
        Row("address given signed", "`u[k] = p - 2**64`", signed_in),
        Row("rows (ptr, nbytes)", "`torch.tensor([[p, n]], dtype=torch.uint64)`", mixed),
        Row("CUDA/ROCm C++ op", "pass `u` (uint64)", lambda: cpp_op_cell(tab(), torch.int64)),
        Row("XPU C++ op", "pass `u` (uint64)", lambda: cpp_op_cell(tab(), torch.uint64)),
        Row(COMPARE_STEP, "uint64 table; R6 kernel", lambda: r6_compare(_cmp_table_u64())),
        Row("custom-op `int` arg", "`u[k].item()`", lambda: custom_op_cell(int(tab()[0].item()))),
    ]


def _per_platform() -> list[Row]:
    """C: today's EC/KV-offload code; XPU and CUDA branches are both rows where they differ."""

    def table(is_xpu: bool, n: int = 4) -> torch.Tensor:
        return torch.zeros(n, dtype=torch.uint64 if is_xpu else torch.int64)  # devptr: ignore[DP005]

    def fill(is_xpu: bool, addrs: Sequence[int] = ADDRS) -> Cell:
        t = table(is_xpu)
        t.numpy()[:] = np.asarray(addrs, dtype=np.uint64)  # devptr: ignore[DP006]
        return _expect(t, addrs)

    def update(is_xpu: bool, addr: int = HI) -> Cell:
        t = table(is_xpu)
        t.numpy()[2] = addr
        return _expect(t[2:3], [addr])

    def strided() -> Cell:
        t = table(True)
        t.numpy()[:] = np.uint64(HI) + np.asarray(IDX, dtype=np.uint64) * np.uint64(STRIDE)
        return _expect(t, [HI + i * STRIDE for i in IDX])

    def overflow() -> Cell:
        t = table(True)
        t.numpy()[:1] = np.uint64(TOP_ALIGNED) + np.asarray([1], dtype=np.uint64) * np.uint64(16)
        return f"not caught: wraps to {_bits_all(t)[0]:#x}"

    def signed_in() -> Cell:
        t = table(True)
        t.numpy()[0] = NEG
        return _expect(t, [HI])

    def mixed() -> Cell:
        t2 = torch.zeros((1, 2), dtype=torch.uint64)  # the XPU branch's dtype
        t2.numpy()[0] = (HI, 4096)
        return _expect(t2, [HI, 4096])

    def filled(is_xpu: bool, addrs: Sequence[int] = ADDRS) -> torch.Tensor:
        t = table(is_xpu, len(addrs))
        t.numpy()[:] = np.asarray(addrs, dtype=np.uint64)  # devptr: ignore[DP006]
        return t

    low = [LOW_BASE + k * STRIDE for k in range(4)]
    return [
        Row(
            "build",
            "`t = torch.empty(n, dtype=dt)`; `t.numpy()[:] = uint64_array` (XPU: dt=uint64)",
            lambda: fill(True),
        ),
        Row("build", "the same on CUDA (dt=int64)", lambda: fill(False), lambda: fill(False, low)),
        Row("update one entry", "`t.numpy()[k] = p` (XPU: dt=uint64)", lambda: update(True)),
        Row(
            "update one entry",
            "the same on CUDA (dt=int64)",
            lambda: update(False),
            lambda: update(False, LOW_BASE),
        ),
        Row("strided slots", "`np.uint64(base) + idx.astype(np.uint64) * np.uint64(stride)`", strided),
        Row(OVERFLOW_STEP, "numpy uint64 `2**64 - 8 + 16`", overflow),
        Row("address given signed", "`t.numpy()[k] = p - 2**64` (XPU)", signed_in),
        Row(
            "rows (ptr, nbytes)",
            "`t2 = torch.empty((n, 2), dtype=dt)`; `t2.numpy()[k] = (p, n)` (XPU)",
            mixed,
        ),
        Row(
            "CUDA/ROCm C++ op",
            "pass `t` (CUDA: int64)",
            lambda: cpp_op_cell(filled(False), torch.int64),
            lambda: _expect(filled(False, low), low),
        ),
        Row("XPU C++ op", "pass `t` (XPU: uint64)", lambda: cpp_op_cell(filled(True), torch.uint64)),
        Row(COMPARE_STEP, "XPU: uint64 table; R6 kernel", lambda: r6_compare(filled(True, (LOW_CMP, HI)))),
        Row(
            COMPARE_STEP,
            "CUDA: int64 table; R6 kernel",
            lambda: r6_compare(filled(False, (LOW_CMP, HI))),
            lambda: r6_compare(filled(False, (LOW_BASE, LOW_BASE + STRIDE))),
        ),
        Row(
            "custom-op `int` arg", "`t[k].item()` (XPU)", lambda: custom_op_cell(int(filled(True)[0].item()))
        ),
    ]


def _build_view() -> list[Row]:
    def make(rows: Sequence[int] | Sequence[Sequence[int]]) -> torch.Tensor:
        return torch.tensor(rows, dtype=torch.uint64).view(torch.int64)

    def rebuild() -> Cell:
        ptrs = list(ADDRS)
        ptrs[2] = HI
        return _expect(make(ptrs)[2:3], [HI])

    def overflow() -> Cell:
        make([TOP_ALIGNED + 16])
        return "not caught: no error"

    def tab() -> torch.Tensor:
        return make(list(ADDRS))

    return [
        Row(
            "build",
            "`torch.tensor(ptrs, dtype=torch.uint64).view(torch.int64)`",
            lambda: _expect(tab(), ADDRS),
        ),
        Row("update one entry", "rebuild the whole table (sglang never writes in place)", rebuild),
        Row(
            "strided slots",
            "`make([base + i * stride for i in idx])` (Python ints)",
            lambda: _expect(make([HI + i * STRIDE for i in IDX]), [HI + i * STRIDE for i in IDX]),
        ),
        Row(OVERFLOW_STEP, "`make([2**64 - 8 + 16])`", overflow),
        Row("address given signed", "`make([p - 2**64])`", lambda: _expect(make([NEG]), [HI])),
        Row("rows (ptr, nbytes)", "`make([[p, n]])`", lambda: _expect(make([[HI, 4096]]), [HI, 4096])),
        Row("CUDA/ROCm C++ op", "pass `t` (int64 view)", lambda: cpp_op_cell(tab(), torch.int64)),
        Row("XPU C++ op", "pass `t` (int64 view)", lambda: cpp_op_cell(tab(), torch.uint64)),
        Row(COMPARE_STEP, "int64 view; R6 kernel", lambda: r6_compare(make([LOW_CMP, HI]))),
        Row("custom-op `int` arg", "`t[k].item()`", lambda: custom_op_cell(int(tab()[0].item()))),
    ]


def _vendored() -> list[Row]:
    """E: the module vLLM would vendor (``devptr/vendor/ptrtable.py``), through its public API
    only (``DevicePtr``, ``Encoding``, ``encoding_for``, ``store``); not the devptr library."""
    ptrs = [vp.DevicePtr(a) for a in ADDRS]

    def table(device_type: str, n: int = 4) -> torch.Tensor:
        return torch.zeros(n, dtype=vp.encoding_for(device_type).torch_dtype)

    def built(device_type: str) -> torch.Tensor:
        t = table(device_type)
        vp.store(t, slice(0, 4), ptrs)
        return t

    def update() -> Cell:
        cells = []
        for device_type in ("xpu", "cuda"):
            t = table(device_type)
            vp.store(t, 2, vp.DevicePtr(HI))
            cells.append(_expect(t[2:3], [HI]))
        return cells[0] if cells[0] == cells[1] else f"XPU: {cells[0]}; CUDA: {cells[1]}"

    def strided() -> Cell:
        t = table("xpu")
        vp.store(t, slice(0, 4), [vp.DevicePtr(HI) + i * STRIDE for i in IDX])
        return _expect(t, [HI + i * STRIDE for i in IDX])

    def overflow() -> Cell:
        vp.DevicePtr(TOP_ALIGNED) + 16
        return "not caught: no error"

    def signed_in() -> Cell:
        t = table("xpu", 1)
        vp.store(t, 0, vp.DevicePtr.of(FakeTensor(NEG)))
        return _expect(t, [HI])

    def mixed() -> Cell:
        t = torch.zeros((1, 2), dtype=vp.Encoding.U64.torch_dtype)
        vp.store(t.view(-1), 0, vp.DevicePtr(HI))
        t.numpy()[0, 1] = 4096
        return _expect(t, [HI, 4096])

    def cmp() -> torch.Tensor:
        t = table("cuda", 2)
        vp.store(t, slice(0, 2), [vp.DevicePtr(LOW_CMP), vp.DevicePtr(HI)])
        return t

    return [
        Row(
            "build",
            "`t = torch.empty(n, dtype=encoding_for(dev).torch_dtype)`; `store(t, slice(0, n), ptrs)`",
            lambda: _expect(built("xpu"), ADDRS),
        ),
        Row("update one entry", "`store(t, k, p)` (int64 and uint64 tables)", update),
        Row(
            "strided slots",
            "`store(t, slice(0, n), [base + i * stride for i in idx])` (DevicePtr arithmetic)",
            strided,
        ),
        Row(OVERFLOW_STEP, "`DevicePtr(2**64 - 8) + 16`", overflow),
        Row("address given signed", "`store(t, k, DevicePtr.of(x))` where `x.data_ptr() < 0`", signed_in),
        Row("rows (ptr, nbytes)", "`store(t.view(-1), 2 * k, p)`; `t.numpy()[k, 1] = n`", mixed),
        Row(
            "CUDA/ROCm C++ op",
            "`t` with `encoding_for('cuda')` (int64)",
            lambda: cpp_op_cell(built("cuda"), torch.int64),
        ),
        Row(
            "XPU C++ op",
            "`t` with `encoding_for('xpu')` (uint64)",
            lambda: cpp_op_cell(built("xpu"), torch.uint64),
        ),
        Row(COMPARE_STEP, "int64 table (`encoding_for('cuda')`); R6 kernel", lambda: r6_compare(cmp())),
        Row("custom-op `int` arg", "`p.signed`", lambda: custom_op_cell(ptrs[0].signed)),
    ]


_MASK: Final = (1 << 64) - 1


def _h_u64(addr: int) -> int:
    """Option F's one normalisation: any int (unsigned or two's complement) to its 64 bits."""
    return addr & _MASK


def _h_table(rows: int, cols: int = 1) -> torch.Tensor:
    """Option F: tables are always ``torch.uint64`` (host), written through a numpy view."""
    shape = (rows,) if cols == 1 else (rows, cols)
    return torch.zeros(shape, dtype=torch.uint64)


def _h_set(table: torch.Tensor, k: int, addr: int) -> None:
    table.numpy()[k] = _h_u64(addr)  # devptr: ignore[DP001] -- option F, executed as evidence


def _h_strided(base: int, idx: Sequence[int], stride: int) -> npt.NDArray[Any]:
    """F's strided slots, with its five-line range check (no silent wrap past 2**64)."""
    index = np.asarray(idx, dtype=np.int64)
    top = _h_u64(base) + int(index.max(initial=0)) * stride
    if index.size and (int(index.min()) < 0 or top >= 1 << 64):
        raise OverflowError(f"slot address {top:#x} is outside [0, 2**64)")
    return np.uint64(_h_u64(base)) + index.astype(np.uint64) * np.uint64(stride)


def _h_view(table: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The consumer's view: int64 for CUDA/ROCm ops, uint64 for XPU ops (no copy)."""
    return table.view(dtype)


def _small_helper() -> list[Row]:
    """F: a ~50-line helper inside vLLM (uint64 tables, numpy-view writes, ``.view()``s, a
    range check on strided slots) plus one lint rule; no new dependency."""

    def filled(addrs: Sequence[int] = ADDRS) -> torch.Tensor:
        t = _h_table(len(addrs))
        t.numpy()[:] = np.asarray([_h_u64(a) for a in addrs], dtype=np.uint64)  # devptr: ignore[DP006]
        return t

    def update() -> Cell:
        t = _h_table(4)
        _h_set(t, 2, HI)
        return _expect(t[2:3], [HI])

    def strided() -> Cell:
        t = _h_table(len(IDX))
        t.numpy()[:] = _h_strided(HI, IDX, STRIDE)
        return _expect(t, [HI + i * STRIDE for i in IDX])

    def overflow() -> Cell:
        out = _h_strided(TOP_ALIGNED, [1], 16)
        return f"not caught: wraps to {int(out[0]):#x}"

    def signed_in() -> Cell:
        t = _h_table(1)
        _h_set(t, 0, NEG)
        return _expect(t, [HI])

    def mixed() -> Cell:
        t = _h_table(1, 2)
        t.numpy()[0] = (_h_u64(HI), 4096)  # devptr: ignore[DP001]
        return _expect(t, [HI, 4096])

    def first_signed() -> int:
        return int(_h_view(filled(), torch.int64)[0].item())

    return [
        Row("build", "`t = u64_table(n)`; `t.numpy()[:] = [u64(p) ...]`", lambda: _expect(filled(), ADDRS)),
        Row("update one entry", "`set_ptr(t, k, p)` (numpy-view write)", update),
        Row("strided slots", "`strided(base, idx, stride)` (numpy uint64, range-checked)", strided),
        Row(OVERFLOW_STEP, "the same, `2**64 - 8 + 16`", overflow),
        Row("address given signed", "`set_ptr(t, k, p - 2**64)` (masks to 64 bits)", signed_in),
        Row("rows (ptr, nbytes)", "`u64_table(n, 2)`; `t.numpy()[k] = (u64(p), n)`", mixed),
        Row(
            "CUDA/ROCm C++ op",
            "`t.view(torch.int64)`",
            lambda: cpp_op_cell(_h_view(filled(), torch.int64), torch.int64),
        ),
        Row("XPU C++ op", "`t` (uint64)", lambda: cpp_op_cell(filled(), torch.uint64)),
        Row(
            COMPARE_STEP,
            "int64 view; R6 kernel",
            lambda: r6_compare(_h_view(filled((LOW_CMP, HI)), torch.int64)),
        ),
        Row("custom-op `int` arg", "`t.view(torch.int64)[k].item()`", lambda: custom_op_cell(first_signed())),
    ]


@attrs.frozen
class Alternative:
    """One way to store addresses, as the RFC names it."""

    key: str
    title: str
    steps: Callable[[], list[Row]]


ALTERNATIVES: Final[tuple[Alternative, ...]] = (
    Alternative("twos", "A. two's complement in int64 everywhere", _twos),
    Alternative("u64-setitem", "B. uint64 with plain torch setitem", _u64_setitem),
    Alternative("per-platform", "C. per-platform dtypes (numpy aliases)", _per_platform),
    Alternative("build-view", "D. build uint64, then .view(torch.int64) (sglang)", _build_view),
    Alternative("devptr", "E. the vendored module (devptr/vendor/ptrtable.py)", _vendored),
    Alternative("small-helper", "F. ~50-line vLLM helper with a range check + one lint rule", _small_helper),
)

SCORED_STEPS: Final[tuple[str, ...]] = (
    "build",
    "update one entry",
    "strided slots",
    OVERFLOW_STEP,
    "address given signed",
    "rows (ptr, nbytes)",
    "CUDA/ROCm C++ op",
    "XPU C++ op",
    COMPARE_STEP,
    "custom-op `int` arg",
)
"""The steps every alternative runs, one row each (two where an alternative's XPU and CUDA
branches differ: C). A step passes when every row of it passes; a row that fails only with
an address >= 2**63 on its CUDA branch is marked fixture-only and does not fail the step."""


def _cell(row: Row) -> Cell:
    cell = _run(row.run, raising_is_ok=row.step == OVERFLOW_STEP)
    if is_ok(cell) or row.low is None:
        return cell
    if is_ok(_run(row.low)):
        return f"{FIXTURE_ONLY}: {cell} (ok with CUDA-like addresses, the only ones CUDA gives)"
    return cell


def alternative_rows(alt: Alternative) -> list[tuple[tuple[str, str], str]]:
    """(step, code), cell for every row of ``alt``."""
    rows = alt.steps()
    extra = {r.step for r in rows} - set(SCORED_STEPS)
    if extra:
        raise ValueError(f"{alt.title} runs steps no other alternative runs: {sorted(extra)}")
    return [((r.step, r.code), _cell(r)) for r in rows]


def is_ok(cell: Cell) -> bool:
    """``ok`` (and, for the overflow step, ``ok, caught: ...``)."""
    return cell == "ok" or cell.startswith("ok,")


def summary_rows() -> list[tuple[tuple[str], str]]:
    """Per alternative: how many of the steps it passes, which fail, which fail only in the fixture."""
    rows: list[tuple[tuple[str], str]] = []
    for alt in ALTERNATIVES:
        cells = alternative_rows(alt)
        missing = [step for step in SCORED_STEPS if not any(label == step for (label, _), _c in cells)]
        if missing:
            raise ValueError(f"{alt.title} has no row for step(s) {missing}")
        failed, fixture = [], []
        for step in SCORED_STEPS:
            mine = [c for (label, _), c in cells if label == step]
            if any(not is_ok(c) and not c.startswith(FIXTURE_ONLY) for c in mine):
                failed.append(step)
            elif any(c.startswith(FIXTURE_ONLY) for c in mine):
                fixture.append(step)
        text = f"{len(SCORED_STEPS) - len(failed)} of {len(SCORED_STEPS)}"
        if failed:
            text += f"; fails: {', '.join(failed)}"
        if fixture:
            text += f"; {FIXTURE_ONLY}: {', '.join(fixture)}"
        rows.append(((alt.title,), text))
    return rows


# -- costs --------------------------------------------------------------------------------
LOW_BASE: Final = 0x7F3A_0000_1000
"""A CUDA-like address (below 2**47): every alternative accepts it, so costs compare."""
N_BUILD: Final = 72
"""Entries per table build (a 36-layer hybrid model: ~72 per request)."""
N_STRIDED: Final = 4096


def _best_ns(fn: Callable[[], object], number: int, repeat: int = 5) -> float:
    """The fastest of ``repeat`` samples of ``number`` calls, per call (benchmarks' harness)."""
    return host(fn, number=number, repeat=repeat, warmup=0).min_ns


def fmt_ns(ns: float) -> str:
    """A per-pointer duration: ``'38 ns'``, ``'0.15 us'``, ``'6.3 us'``."""
    if ns < 100:
        return f"{ns:.0f} ns" if ns >= 10 else f"{ns:.1f} ns"
    us = ns / 1000
    return f"{us:.2f} us" if us < 1 else f"{us:.1f} us"


def _cost_cases() -> list[tuple[str, str, Callable[[], float]]]:
    tensors = [torch.empty(1) for _ in range(N_BUILD)]
    low = [LOW_BASE + k * STRIDE for k in range(N_BUILD)]
    ptrs = [DevicePtr(a) for a in low]
    i64 = torch.zeros(N_BUILD, dtype=torch.int64)
    u64 = torch.zeros(N_BUILD, dtype=torch.uint64)
    u64_np = u64.numpy()
    buf: PtrBuffer = PtrBuffer(N_STRIDED, pin_memory=False)
    idx = np.random.default_rng(0).integers(0, 1 << 12, N_STRIDED).astype(np.int64)
    idx_u = idx.astype(np.uint64)
    p = ptrs[3]
    a = p.addr

    def one(fn: Callable[[], object]) -> Callable[[], float]:
        return lambda: _best_ns(fn, 2000)

    def per(fn: Callable[[], object], n: int, number: int = 200) -> Callable[[], float]:
        return lambda: _best_ns(fn, number) / n

    def i64_set() -> None:
        i64[3] = _to_i64(a)  # devptr: ignore[DP001]

    def u64_set() -> None:
        u64[3] = a

    def np_alias_set() -> None:
        u64_np[3] = a

    def buf_set() -> None:
        buf[3] = p

    def store_set() -> None:
        store(i64, 3, p)

    vp_p = vp.DevicePtr(a)

    def vendored_set() -> None:
        vp.store(i64, 3, vp_p)

    def helper_set() -> None:
        u64_np[3] = a & _MASK  # F keeps the numpy view, as vLLM's alias modules do

    return [
        ("A. two's complement int64", "write one entry: `t[k] = to_i64(p)`", one(i64_set)),
        ("B. uint64 torch setitem", "write one entry: `u[k] = p`", one(u64_set)),
        ("C. per-platform (numpy alias)", "write one entry: `t.numpy()[k] = p`", one(np_alias_set)),
        (
            "D. build then view",
            f"write one entry: rebuild the {N_BUILD}-entry table",
            one(lambda: torch.tensor(low, dtype=torch.uint64).view(torch.int64)),
        ),
        ("E. vendored module", "write one entry: `store(t, k, p)` (torch int64)", one(vendored_set)),
        ("devptr library", "write one entry: `buf[k] = p`", one(buf_set)),
        ("devptr library", "write one entry: `store(t, k, p)` (torch int64)", one(store_set)),
        ("F. small vLLM helper", "write one entry: `view[k] = p & MASK` (kept numpy view)", one(helper_set)),
        (
            "A. two's complement int64",
            f"build {N_BUILD} from tensors: `torch.tensor([to_i64(t.data_ptr()) ...], dtype=torch.int64)`",
            per(
                lambda: torch.tensor(
                    [_to_i64(t.data_ptr()) for t in tensors],
                    dtype=torch.int64,  # devptr: ignore[DP002]
                ),
                N_BUILD,
            ),
        ),
        (
            "B. uint64 torch setitem",
            f"build {N_BUILD} from tensors: `torch.tensor([t.data_ptr() ...], dtype=torch.uint64)`",
            per(
                lambda: torch.tensor(
                    [t.data_ptr() for t in tensors], dtype=torch.uint64
                ),  # devptr: ignore[DP006]
                N_BUILD,
            ),
        ),
        (
            "D. build then view",
            f"build {N_BUILD} from tensors: the same, then `.view(torch.int64)`",
            per(
                lambda: torch.tensor(
                    [t.data_ptr() for t in tensors],
                    dtype=torch.uint64,  # devptr: ignore[DP006]
                ).view(torch.int64),
                N_BUILD,
            ),
        ),
        (
            "devptr library",
            f"build {N_BUILD} from tensors: `buf.fill(0, tensors)`",
            per(lambda: buf.fill(0, tensors), N_BUILD),
        ),
        (
            "A. two's complement int64",
            f"{N_STRIDED} strided slots: `torch.from_numpy(idx) * stride + to_i64(base)`",
            per(
                lambda: torch.from_numpy(idx) * STRIDE + _to_i64(LOW_BASE),  # devptr: ignore[DP003]
                N_STRIDED,
            ),
        ),
        (
            "C. per-platform (numpy alias)",
            f"{N_STRIDED} strided slots: `np.uint64(base) + idx_u64 * np.uint64(stride)`",
            per(lambda: np.uint64(LOW_BASE) + idx_u * np.uint64(STRIDE), N_STRIDED),
        ),
        (
            "D. build then view",
            f"{N_STRIDED} strided slots: Python ints, then `torch.tensor(..., dtype=torch.uint64)`",
            per(
                lambda: torch.tensor([LOW_BASE + int(i) * STRIDE for i in idx], dtype=torch.uint64),
                N_STRIDED,
                number=5,
            ),
        ),
        (
            "devptr library",
            f"{N_STRIDED} strided slots: `buf.fill_strided(0, base, idx, stride)` (checked)",
            per(lambda: buf.fill_strided(0, DevicePtr(LOW_BASE), idx, STRIDE), N_STRIDED),
        ),
    ]


def cost_rows() -> list[tuple[tuple[str, str], str]]:
    """(alternative, operation), per-pointer time (best of 5 runs) on this machine."""
    return [((alt, op), fmt_ns(fn())) for alt, op, fn in _cost_cases()]


def kernel_rows() -> list[tuple[tuple[str, str], str]]:
    """The kernel rule: compare addresses unsigned (Triton interpreter on CPU)."""
    u = _cmp_table_u64()
    return [
        (("int64 table", "`a < b` on loaded values"), _run(lambda: triton_lt(u.view(torch.int64)))),
        (
            ("int64 table", "`.to(tl.uint64, bitcast=True)`, then `a < b`"),
            _run(lambda: triton_lt(u.view(torch.int64), bitcast=True)),
        ),
        (("uint64 table", "`a < b` on loaded values"), _run(lambda: triton_lt(u))),
        (
            ("uint64 table", "`.to(tl.uint64, bitcast=True)`, then `a < b`"),
            _run(lambda: triton_lt(u, bitcast=True)),
        ),
    ]


def _signature_type(t: torch.Tensor) -> Cell:
    try:
        from triton.runtime.jit import mangle_type
    except ImportError:
        return "triton (or its mangle_type) not available"
    return f"`{mangle_type(t)}`"


def compile_key_rows() -> list[tuple[tuple[str], str]]:
    """The argument type Triton puts in a kernel's signature (its compile key) per table."""
    buf: PtrBuffer = PtrBuffer(2, device="cpu", pin_memory=False)
    return [
        (("`torch.int64` table",), _run(lambda: _signature_type(torch.zeros(2, dtype=torch.int64)))),
        (("`torch.uint64` table",), _run(lambda: _signature_type(torch.zeros(2, dtype=torch.uint64)))),
        (("`buf.device(Encoding.I64)`",), _run(lambda: _signature_type(buf.device(Encoding.I64)))),
        (("`buf.device(Encoding.U64)`",), _run(lambda: _signature_type(buf.device(Encoding.U64)))),
    ]
