"""The EC swap's engine dispatcher: SM kernel, copy engines, or both, from measured crossovers.

CPU: the choice rule on given measurements and the path checks. GPU (``gpu`` marker):
calibration on the device, every engine byte-exact in every direction, the copy engines
on the legacy default stream, and the choice visible after an ``auto`` swap.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np
import pytest
import torch
from support.segment_cases import scattered

from devptr import DevicePtr, InvalidValueError, PtrTypeError
from devptr.adapters.ec_connector import (
    Crossovers,
    DescriptorBufferPool,
    calibrate_engines,
    choose_path,
    last_engine_choice,
    swap_blocks_batch,
    unregister_swap_op,
)
from devptr.adapters.ec_connector import _engines as E

KIB = 1024


def _table() -> Crossovers:
    c = Crossovers("test device")
    c.rates["H2D"] = {
        4 * KIB: {"kernel": 50.0, "copy_engine": 3.0, "split": 10.0},
        256 * KIB: {"kernel": 50.0, "copy_engine": 49.0, "split": 52.0},
        4096 * KIB: {"kernel": 50.0, "copy_engine": 55.0, "split": 53.0},
    }
    c.fractions["H2D"] = {4 * KIB: 0.05, 256 * KIB: 0.45, 4096 * KIB: 0.52}
    return c


@pytest.mark.parametrize(
    ("block", "engine", "fraction"),
    [
        (4 * KIB, "kernel", 0.0),
        (2 * KIB, "kernel", 0.0),
        (200 * KIB, "split", 0.45),
        (300 * KIB, "split", 0.45),
        (3 * 1024 * KIB, "copy_engine", 0.0),
        (64 * 1024 * KIB, "copy_engine", 0.0),
    ],
)
def test_best_engine_at_the_nearest_measured_block_size(block: int, engine: str, fraction: float) -> None:
    best = _table().best("H2D", block)
    assert best is not None
    assert best[:2] == (engine, fraction)
    assert "test device" in best[2] and "GB/s" in best[2]


def test_no_measurement_no_choice() -> None:
    assert _table().best("D2H", 4 * KIB) is None


def test_copy_engine_path_only_on_cuda() -> None:
    with pytest.raises(InvalidValueError, match="CUDA"):
        choose_path("cpu", torch.device("cpu"), "copy_engine")
    with pytest.raises(PtrTypeError, match="copy_engine"):
        choose_path("cpu", torch.device("cpu"), "dma")  # type: ignore[arg-type]
    src = torch.zeros(8, dtype=torch.uint8)
    dst = torch.ones(8, dtype=torch.uint8)
    t = lambda v: torch.tensor([v], dtype=torch.int64)  # noqa: E731
    with pytest.raises(InvalidValueError):
        swap_blocks_batch(t(src.data_ptr()), t(dst.data_ptr()), t(8), device="cpu", path="copy_engine")
    assert dst.eq(1).all()  # refused before anything was copied


# -- on a GPU ----------------------------------------------------------------------------------
def _blocks(
    direction: str, rng: np.random.Generator
) -> tuple[torch.Tensor, torch.Tensor, list[int], list[int], list[int]]:
    """Random blocks of odd sizes, source offsets and destination offsets in two arenas."""
    sizes = [int(x) for x in rng.integers(1, 70_000, 24)]
    src_offs, dst_offs, s, d = scattered(sizes, int(rng.integers(1 << 30)), gap=64)

    def arena(side: str, n: int) -> torch.Tensor:
        t = torch.from_numpy(rng.integers(0, 256, n + 64, dtype=np.uint8))
        return t.cuda() if side == "D" else t.pin_memory()

    return arena(direction[0], s), arena(direction[2], d), src_offs, dst_offs, sizes


def _swap_and_check(direction: str, path: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    src, dst, so, do, sizes = _blocks(direction, rng)
    want = dst.cpu().clone()
    host_src = src.cpu()
    for a, b, z in zip(so, do, sizes, strict=True):
        want[b : b + z] = host_src[a : a + z]
    pool = DescriptorBufferPool(torch.device("cuda"))
    bufs = pool.acquire(len(sizes))
    base_s, base_d = DevicePtr.of(src).addr, DevicePtr.of(dst).addr
    bufs.add_copies(0, [DevicePtr(base_s + a) for a in so], [DevicePtr(base_d + b) for b in do], sizes)
    bufs.swap(len(sizes), path=path)  # type: ignore[arg-type]
    torch.cuda.synchronize()
    pool.release(bufs)
    assert torch.equal(dst.cpu(), want)


@contextlib.contextmanager
def _measured(dev: torch.device, table: Crossovers) -> Iterator[None]:
    """``table`` as the device's crossovers for the duration (the measured ones restored)."""
    saved = E._crossovers.get(dev.index)
    E._crossovers[dev.index] = table
    try:
        yield
    finally:
        if saved is None:
            E._crossovers.pop(dev.index, None)
        else:
            E._crossovers[dev.index] = saved


@pytest.fixture
def portable() -> None:
    unregister_swap_op("cuda")


@pytest.mark.gpu
@pytest.mark.usefixtures("portable")
@pytest.mark.parametrize("direction", ["H2D", "D2H", "D2D"])
@pytest.mark.parametrize("path", ["kernel", "copy_engine", "auto"])
def test_every_engine_copies_exactly(direction: str, path: str) -> None:
    with torch.cuda.stream(torch.cuda.Stream()):
        _swap_and_check(direction, path, seed=len(direction + path))
    if path != "auto":
        choice = last_engine_choice()
        assert choice is not None and choice.engine.startswith(path) and "requested" in choice.reason


@pytest.mark.gpu
@pytest.mark.usefixtures("portable")
def test_copy_engines_on_the_legacy_default_stream() -> None:
    # the batched call refuses the legacy default stream: the copies go to a side stream
    # ordered by events, so work queued before and after on the default stream sees them
    assert torch.cuda.current_stream().cuda_stream == 0
    src = torch.empty(1 << 20, dtype=torch.uint8, device="cuda")
    dst = torch.empty(1 << 20, dtype=torch.uint8, pin_memory=True)
    torch.cuda._sleep(2_000_000)  # the fill below lands after this
    src.fill_(7)
    t = lambda v: torch.tensor([v], dtype=torch.int64)  # noqa: E731
    swap_blocks_batch(t(src.data_ptr()), t(dst.data_ptr()), t(1 << 20), device="cuda", path="copy_engine")
    torch.cuda.current_stream().synchronize()
    assert bool(dst.eq(7).all())


@pytest.mark.gpu
@pytest.mark.usefixtures("portable")
@pytest.mark.parametrize("fraction", [0.0, 0.3, 1.0])
def test_split_engine_copies_exactly(fraction: float) -> None:
    dev = torch.device("cuda", torch.cuda.current_device())
    table = Crossovers("forced")
    table.rates["H2D"] = {4 * KIB: {"kernel": 1.0, "copy_engine": 1.0, "split": 2.0}}
    table.fractions["H2D"] = {4 * KIB: fraction}
    with _measured(dev, table), torch.cuda.stream(torch.cuda.Stream()):
        _swap_and_check("H2D", "auto", seed=3)
    choice = last_engine_choice()
    assert choice is not None and (choice.engine, choice.fraction) == ("split", fraction)


@pytest.mark.gpu
@pytest.mark.usefixtures("portable")
def test_calibration_measures_every_direction_and_auto_follows_it() -> None:
    cross = calibrate_engines("cuda", block_sizes=(4 * KIB, 1024 * KIB), total=8 << 20, repeat=1)
    assert set(cross.rates) == {"H2D", "D2H", "D2D"}
    for table in cross.rates.values():
        for row in table.values():
            assert row["kernel"] > 0 and row[E.copy_engine_name()] > 0
    with torch.cuda.stream(torch.cuda.Stream()):
        _swap_and_check("D2H", "auto", seed=9)
    choice = last_engine_choice()
    assert choice is not None and choice.direction == "D2H" and "measured at" in choice.reason
    best = cross.best("D2H", choice.block_bytes)
    assert best is not None and best[0] == choice.engine


@pytest.mark.gpu
@pytest.mark.usefixtures("portable")
def test_calibration_times_contested_block_sizes_again_on_larger_batches() -> None:
    blocks = (4 * KIB, 1024 * KIB)
    cross = calibrate_engines("cuda", block_sizes=blocks, total=8 << 20, repeat=1, large_total=32 << 20)
    assert (cross.total, cross.large_total) == (8 << 20, 32 << 20)
    for direc, table in cross.rates.items():
        for block, row in table.items():
            again = cross.large.get(direc, {}).get(block)
            assert (again is not None) == E.contested(row), (direc, block, row)
            if again is not None:
                assert set(again) == set(row) and all(v > 0 for v in again.values())
                best = cross.best(direc, block, 64 << 20)
                assert best is not None and "fitted at this batch's 64.0 MiB" in best[2]
    # 1 MiB blocks over PCIe: the kernel and the copy engines are close on any H100/H200
    assert any(1024 * KIB in t for t in cross.large.values()), cross.rates
    none = calibrate_engines("cuda", block_sizes=(1024 * KIB,), total=8 << 20, repeat=1, large_total=None)
    assert none.large == {} and none.large_total == 0


class _Runtime:
    """The CUDA runtime's two copy calls, recorded (the filter before them is under test)."""

    def __init__(self, has_batch: bool) -> None:
        self.has_batch = has_batch
        self.calls: list[tuple[str, list[int], list[int], list[int]]] = []

    def batch(self, d: np.ndarray, s: np.ndarray, k: np.ndarray, stream: int, any_order: bool) -> None:
        self.calls.append(("batch", d.tolist(), s.tolist(), k.tolist()))

    def loop(self, d: np.ndarray, s: np.ndarray, k: np.ndarray, stream: int) -> None:
        self.calls.append(("loop", d.tolist(), s.tolist(), k.tolist()))


@pytest.mark.parametrize("has_batch", [True, False])
def test_empty_copies_never_reach_the_copy_engines(has_batch: bool) -> None:
    # the batched call refuses zero sizes (and an empty tensor's address may be null)
    rt = _Runtime(has_batch)
    u = lambda *v: np.array(v, dtype=np.uint64)  # noqa: E731
    E._copy_on(rt, u(16, 0, 48), u(1, 0, 3), u(8, 0, 24), 7, False)  # type: ignore[arg-type]
    E._copy_on(rt, u(0), u(0), u(0), 7, False)  # type: ignore[arg-type]
    assert rt.calls == [("batch" if has_batch else "loop", [16, 48], [1, 3], [8, 24])]


@pytest.mark.gpu
@pytest.mark.usefixtures("portable")
def test_auto_with_empty_copies_first() -> None:
    # empty tensors may have a null address: the direction comes from the first copy with
    # bytes, and empty copies never reach the copy engines
    empty = torch.empty(0, dtype=torch.uint8, device="cuda")
    src = torch.arange(256, dtype=torch.int64).to(torch.uint8).cuda()
    dst = torch.zeros(256, dtype=torch.uint8).pin_memory()
    t = lambda *v: torch.tensor(v, dtype=torch.int64)  # noqa: E731
    for path in ("auto", "copy_engine", "kernel"):
        dst.zero_()
        swap_blocks_batch(
            t(empty.data_ptr(), src.data_ptr()), t(0, dst.data_ptr()), t(0, 256), device="cuda", path=path
        )  # type: ignore[arg-type]
        torch.cuda.synchronize()
        assert torch.equal(dst, src.cpu()), path


# -- copy engines on several streams, batch facts, the direction hint ---------------------------
def test_a_row_key_names_the_engine_and_its_streams() -> None:
    assert E.engine_key("copy_engine x4") == ("copy_engine", 4)
    assert E.engine_key("copy_engine") == ("copy_engine", 1)
    assert E.engine_key("kernel") == ("kernel", 1)
    c = Crossovers("test device")
    c.rates["D2H"] = {64 * KIB: {"kernel": 50.0, "copy_engine": 48.0, "copy_engine x4": 54.0}}
    best = c.best("D2H", 100 * KIB)
    assert best is not None and (best[0], best[3]) == ("copy_engine", 4)


def test_validate_returns_the_facts_the_dispatcher_reuses() -> None:
    from devptr.adapters.ec_connector._swap import validate

    u = lambda *v: np.array(v, dtype=np.uint64)  # noqa: E731
    facts = validate(u(4096, 8192, 0), u(1 << 40, 2 << 40, 0), u(100, 300, 0))
    assert facts == (300, 400, True)
    assert validate(u(4096), u(8192), u(7)) == (7, 7, False)
    assert validate(u(), u(), u()) == (0, 0, False)


def test_validate_still_finds_a_null_address_among_empty_copies() -> None:
    from devptr import AddressRangeError
    from devptr.adapters.ec_connector._swap import validate

    u = lambda *v: np.array(v, dtype=np.uint64)  # noqa: E731
    validate(u(0, 64), u(0, 128), u(0, 8))  # null with 0 bytes: allowed
    with pytest.raises(AddressRangeError, match="copy 1 of 8 bytes has a null address"):
        validate(u(16, 64), u(32, 0), u(8, 8))


class _PointerRuntime:
    """``on_device`` answered from a set of device addresses, with the calls counted."""

    def __init__(self, device_addrs: set[int]) -> None:
        self.device_addrs = device_addrs
        self.calls = 0

    def on_device(self, addr: int) -> bool:
        self.calls += 1
        return addr in self.device_addrs


def test_direction_is_looked_up_once_per_pair_of_granules() -> None:
    E._directions.clear()
    rt = _PointerRuntime({1 << 40})
    assert E.direction(rt, 1 << 40, 5 << 30) == "D2H"  # type: ignore[arg-type]
    assert E.direction(rt, (1 << 40) + 4096, (5 << 30) + 64) == "D2H"  # type: ignore[arg-type]
    assert rt.calls == 2  # the second batch, in the same 2 MiB granules, asked nothing
    assert E.direction(rt, 5 << 30, 1 << 40) == "H2D"  # type: ignore[arg-type]
    assert rt.calls == 4
    E._directions.clear()


@pytest.mark.gpu
@pytest.mark.usefixtures("portable")
@pytest.mark.parametrize("direction", ["H2D", "D2H", "D2D"])
@pytest.mark.parametrize("streams", [2, 3, 8, 64])
def test_copy_engines_on_several_streams_copy_exactly(direction: str, streams: int) -> None:
    # 24 blocks over up to 64 streams (more streams than copies: one copy per stream)
    dev = torch.device("cuda", torch.cuda.current_device())
    table = Crossovers("forced")
    table.rates[direction] = {4 * KIB: {"kernel": 1.0, f"copy_engine x{streams}": 2.0}}
    with _measured(dev, table), torch.cuda.stream(torch.cuda.Stream()):
        _swap_and_check(direction, "auto", seed=streams)
    choice = last_engine_choice()
    assert choice is not None and (choice.engine, choice.streams) == ("copy_engine", streams)


MIB = 1024 * KIB


def _contested_table() -> Crossovers:
    """D2H at 64 KiB as an H200 measured it (06:33 UTC run): the kernel ahead on 32 MiB
    batches, the copy engines ahead on 128 MiB ones (their fixed cost per batch)."""
    c = Crossovers("test device", total=32 * MIB, large_total=128 * MIB)
    c.rates["D2H"] = {
        4 * KIB: {"kernel": 51.8, "copy_engine": 9.3},
        64 * KIB: {"kernel": 51.7, "copy_engine": 50.1, "copy_engine x4": 50.8},
    }
    c.large["D2H"] = {64 * KIB: {"kernel": 52.0, "copy_engine": 53.0, "copy_engine x4": 54.0}}
    return c


@pytest.mark.parametrize(
    ("total", "engine", "streams"),
    [
        (8 * MIB, "kernel", 1),  # smaller batches: the copy engines' fixed cost weighs more
        (32 * MIB, "kernel", 1),  # the measured batch size: the measured winner
        (None, "kernel", 1),  # no size given: the calibration's own
        (128 * MIB, "copy_engine", 4),
        (256 * MIB, "copy_engine", 4),
    ],
)
def test_a_contested_block_size_is_decided_at_the_batch_s_own_bytes(
    total: int | None, engine: str, streams: int
) -> None:
    best = _contested_table().best("D2H", 64 * KIB, total)
    assert best is not None
    assert (best[0], best[3]) == (engine, streams)
    assert "fitted at this batch's" in best[2] and "128 MiB" in best[2]


def test_an_uncontested_block_size_keeps_its_measured_winner_at_any_size() -> None:
    table = _contested_table()
    for total in (1 * MIB, 32 * MIB, 1024 * MIB):
        best = table.best("D2H", 4 * KIB, total)
        assert best is not None and best[0] == "kernel" and "fitted" not in best[2]


def test_the_fitted_rate_passes_through_both_measurements_and_stays_finite() -> None:
    for small, large in ((50.0, 55.0), (52.0, 52.5), (30.0, 50.0)):
        assert E.fitted_rate(small, large, 32 * MIB, 128 * MIB, 32 * MIB) == pytest.approx(small)
        assert E.fitted_rate(small, large, 32 * MIB, 128 * MIB, 128 * MIB) == pytest.approx(large)
        assert small <= E.fitted_rate(small, large, 32 * MIB, 128 * MIB, 64 * MIB) <= large
        assert E.fitted_rate(small, large, 32 * MIB, 128 * MIB, 1 << 40) <= large * 1.5
    # a rate that falls with the batch (noise, contention): the larger batch's rate, never more
    assert E.fitted_rate(55.0, 50.0, 32 * MIB, 128 * MIB, 1024 * MIB) == 50.0


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        ({"kernel": 51.7, "copy_engine": 50.1, "copy_engine x4": 50.8}, True),
        ({"kernel": 50.0, "copy_engine": 54.0}, True),
        ({"kernel": 51.8, "copy_engine": 9.3}, False),
        ({"kernel": 1300.0, "copy_engine": 800.0}, False),
        ({"kernel": 50.0}, False),
        ({"copy_engine": 50.0}, False),
    ],
)
def test_contested_cells(row: dict[str, float], expected: bool) -> None:
    assert E.contested(row) is expected
