"""One set of cases, run against devptr's API, the vendorable module and a vendored copy of it.

Each ``case_*`` function takes an :class:`~vendor_impls.Impl` and asserts one behaviour the
core promises (issue 22 item 13 among them: pickling, ``DevicePtr(16) == 16``, ``< 17``,
``store(t, -1, p)``, slices that would clamp, 2-D indices, one ``DEVPTR_ENCODING`` grammar).
``test_parity`` runs every case on every implementation; ``test_the_cases_catch_divergence``
runs some of them on mutated copies of the module (the divergences of the old second
implementation) and asserts that each is caught, so the suite is shown to fail.
"""

from __future__ import annotations

import copy
import pickle
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
from vendor_impls import COPY_ENV_VAR, SOURCE, Impl, env_setter, load_copy, make

from devptr.testing import HIGH_ADDRESSES, PATTERN_ADDRESSES, TOP_ALIGNED, FakeTensor, table_bits

HI = HIGH_ADDRESSES[2]


def _raises(impl: Impl, error: str, family: type[Exception], call: Callable[[], object]) -> str:
    """``call()`` raises ``impl``'s ``error`` class, a DevPtrError and a ``family``; its message."""
    with pytest.raises(getattr(impl.api, error)) as info:
        call()
    assert isinstance(info.value, family) and isinstance(info.value, impl.api.DevPtrError)
    return str(info.value)


# -- DevicePtr --------------------------------------------------------------------------------
def case_value_and_encodings(impl: Impl) -> None:
    a = impl.api
    p = a.DevicePtr(HI)
    assert p.addr == HI and p.signed == HI - 2**64 and repr(p) == f"DevicePtr({HI:#x})"
    assert a.DevicePtr.from_signed(HI - 2**64) == p and a.DevicePtr.of(FakeTensor(HI - 2**64)) == p
    assert p.encode(a.Encoding.I64) == HI - 2**64 and p.encode(a.Encoding.U64) == HI
    assert (p + 16) - p == 16 and 16 + p == p + 16 and p - 16 == a.DevicePtr(HI - 16)
    assert a.DevicePtr.NULL.is_null and a.DevicePtr(TOP_ALIGNED).is_aligned(8)
    assert not a.DevicePtr(2**63 + 42).is_aligned(8)


def case_constructor_refusals(impl: Impl) -> None:
    a = impl.api
    for bad in (True, 1.0, None, "0x10", np.int64(5), np.uint64(5)):
        _raises(impl, "PtrTypeError", TypeError, lambda bad=bad: a.DevicePtr(bad))
    for out in (-1, 2**64, -(2**63)):
        msg = _raises(impl, "AddressRangeError", ValueError, lambda out=out: a.DevicePtr(out))
        assert hex(out) in msg
    assert _raises(impl, "AddressRangeError", ValueError, lambda: a.DevicePtr(-0x10)).endswith("(got -0x10)")
    _raises(impl, "AddressOverflowError", OverflowError, lambda: a.DevicePtr(TOP_ALIGNED) + 16)
    _raises(impl, "AddressOverflowError", OverflowError, lambda: a.DevicePtr(8) - 9)
    _raises(impl, "AddressOverflowError", OverflowError, lambda: a.DevicePtr.of(FakeTensor(TOP_ALIGNED), 8))
    _raises(impl, "PtrTypeError", TypeError, lambda: a.DevicePtr(8) + 1.0)
    _raises(impl, "PtrTypeError", TypeError, lambda: a.DevicePtr.of(5))
    _raises(impl, "AddressRangeError", ValueError, lambda: a.DevicePtr.from_signed(2**63))
    _raises(impl, "AddressRangeError", ValueError, lambda: a.DevicePtr(0).is_aligned(0))
    _raises(impl, "PtrTypeError", TypeError, lambda: a.DevicePtr(0).encode("U64"))


def case_pickle_copy_frozen(impl: Impl) -> None:
    p = impl.api.DevicePtr(HI)
    for q in (pickle.loads(pickle.dumps(p)), copy.copy(p), copy.deepcopy(p), copy.deepcopy([p])[0]):
        assert type(q) is type(p) and q == p and hash(q) == hash(p)
    with pytest.raises(AttributeError):
        p.addr = 1  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del p.addr
    assert p.addr == HI


def case_compares_with_deviceptrs_only(impl: Impl) -> None:
    a = impl.api
    p = a.DevicePtr(16)
    for other in (16, 17, np.int64(16), np.uint64(16), True, torch.tensor(16)):
        _raises(impl, "PtrTypeError", TypeError, lambda other=other: p == other)
        _raises(impl, "PtrTypeError", TypeError, lambda other=other: p != other)
        _raises(impl, "PtrTypeError", TypeError, lambda other=other: p < other)
        _raises(impl, "PtrTypeError", TypeError, lambda other=other: p >= other)
    assert (p == None) is False and (p != "x") is True  # noqa: E711  (not an integer: unequal)
    assert a.DevicePtr(2**63 - 1) < a.DevicePtr(2**63) and a.DevicePtr(2**64 - 1) >= a.DevicePtr(0)
    assert sorted([a.DevicePtr(2**64 - 8), a.DevicePtr(1)])[0] == a.DevicePtr(1)
    assert len({a.DevicePtr(5), a.DevicePtr(5)}) == 1


def case_no_implicit_int(impl: Impl) -> None:
    p = impl.api.DevicePtr(2**63)
    assert not hasattr(p, "__index__") and not hasattr(p, "__int__")
    with pytest.raises(TypeError):
        np.zeros(1, dtype=np.uint64)[0] = p
    with pytest.raises(TypeError):
        torch.zeros(1, dtype=torch.int64)[0] = p


# -- encodings --------------------------------------------------------------------------------
def case_encoding_defaults(impl: Impl) -> None:
    a = impl.api
    assert a.Encoding.U64.torch_dtype is torch.uint64 and a.Encoding.I64.numpy_dtype == np.int64
    with impl.env(None):
        for dev, enc in (
            ("xpu", "U64"),
            ("xpu:0", "U64"),
            ("cuda", "I64"),
            ("cuda:1", "I64"),
            ("cpu", "I64"),
            ("hip", "I64"),
            (torch.device("cpu"), "I64"),
            (torch.zeros(1), "I64"),
        ):
            assert a.encoding_for(dev) is a.Encoding[enc], dev
        msg = _raises(impl, "UnknownBackendError", ValueError, lambda: a.encoding_for("tpu9"))
        assert "'tpu9'" in msg
        _raises(impl, "UnknownBackendError", ValueError, lambda: a.encoding_for("cuda:x"))
        _raises(impl, "PtrTypeError", TypeError, lambda: a.encoding_for(3))


def case_encoding_default_for_unknown_types(impl: Impl) -> None:
    """``encoding_for(t, default=...)``: the branch's old answer for types the registry lacks."""
    a = impl.api
    with impl.env(None):
        for dev in ("", "tpu", "npu", "XPU"):
            assert a.encoding_for(dev, default=a.Encoding.I64) is a.Encoding.I64
            assert a.encoding_for(dev, default=a.Encoding.U64) is a.Encoding.U64
            _raises(impl, "UnknownBackendError", ValueError, lambda dev=dev: a.encoding_for(dev))
        assert a.encoding_for("xpu", default=a.Encoding.I64) is a.Encoding.U64  # known: default unused
        assert a.encoding_for("cuda", default=a.Encoding.U64) is a.Encoding.I64
        _raises(impl, "PtrTypeError", TypeError, lambda: a.encoding_for("tpu", default="I64"))


def case_environment_overrides(impl: Impl) -> None:
    a = impl.api
    with impl.env("U64"):
        assert a.encoding_for("cuda") is a.Encoding.U64
        assert a.encoding_for("tpu", default=a.Encoding.I64) is a.Encoding.U64  # every backend
        _raises(impl, "UnknownBackendError", ValueError, lambda: a.encoding_for("tpu9"))
    with impl.env(" xpu=I64 , cuda=u64 "):
        assert a.encoding_for("cuda") is a.Encoding.U64 and a.encoding_for("xpu") is a.Encoding.I64
        assert a.encoding_for("cpu") is a.Encoding.I64
    with impl.env(""):
        assert a.encoding_for("xpu") is a.Encoding.U64


BAD_ENV = [
    "XPU=I64",
    "CUDA=U64",
    "cuda:0=U64",
    "cdua=U64",
    "U65",
    "garbage",
    "xpu=U64,=I64",
    "U64,I64",
    "xpu=U65",
    "xpu=",
    "xpu=U64=I64",
    "U64,xpu=I64",
]


def case_environment_is_strict(impl: Impl) -> None:
    for value in BAD_ENV:
        with pytest.raises(impl.api.UnknownBackendError) as info, impl.env(value):
            pass
        assert impl.variable in str(info.value) and repr(value.strip()) in str(info.value), value
        assert isinstance(info.value, ValueError)


# -- store ------------------------------------------------------------------------------------
CONTAINERS: dict[str, Callable[[int], torch.Tensor | np.ndarray]] = {
    "torch-i64": lambda n: torch.zeros(n, dtype=torch.int64),
    "torch-u64": lambda n: torch.zeros(n, dtype=torch.uint64),
    "numpy-i64": lambda n: np.zeros(n, dtype=np.int64),
    "numpy-u64": lambda n: np.zeros(n, dtype=np.uint64),
}


def case_store_bit_exact(impl: Impl) -> None:
    a = impl.api
    n = len(PATTERN_ADDRESSES)
    for make_c in CONTAINERS.values():
        c = make_c(n)
        for i, addr in enumerate(PATTERN_ADDRESSES):
            a.store(c, i, a.DevicePtr(addr))
        assert table_bits(c) == list(PATTERN_ADDRESSES)
        c2 = make_c(n + 2)
        a.store(c2, slice(1, n + 1), [a.DevicePtr(x) for x in PATTERN_ADDRESSES])
        assert table_bits(c2) == [0, *PATTERN_ADDRESSES, 0]
        a.store(c2, slice(0, n), np.array(PATTERN_ADDRESSES, dtype=np.uint64))
        a.store(c2, [n, n + 1], [FakeTensor(-8), a.DevicePtr(HI)])
        assert table_bits(c2) == [*PATTERN_ADDRESSES, 2**64 - 8, HI]
    t = torch.zeros(1, dtype=torch.int64)
    a.store(t, 0, a.DevicePtr(2**64 - 8))
    assert t.item() == -8


def case_store_never_wraps_or_clamps(impl: Impl) -> None:
    a, p = impl.api, impl.api.DevicePtr(HI)
    for make_c in CONTAINERS.values():
        c = make_c(4)
        for index, value in (
            (-1, p),
            (4, p),
            (slice(-2, None), [p, p]),
            (slice(2, 9), [p, p]),
            (slice(None, -1), [p, p, p]),
            ([0, 4], [p, p]),
            ([-1], [p]),
        ):
            _raises(
                impl, "CapacityError", IndexError, lambda c=c, i=index, v=value: a.store(c, i, v)
            )
        _raises(impl, "PtrTypeError", TypeError, lambda c=c: a.store(c, 1.0, p))
        _raises(impl, "PtrTypeError", TypeError, lambda c=c: a.store(c, slice(0, 2, -1), [p, p]))
        assert table_bits(c) == [0, 0, 0, 0]


def case_store_2d(impl: Impl) -> None:
    a = impl.api
    t = torch.zeros((2, 3), dtype=torch.int64)
    a.store(t, (1, 2), a.DevicePtr(2**63))
    a.store(t, (0, slice(0, 2)), [a.DevicePtr(1), a.DevicePtr(2**64 - 1)])
    a.store(t, 1, [a.DevicePtr(7), a.DevicePtr(8), a.DevicePtr(9)])  # a whole row
    assert table_bits(t) == [1, 2**64 - 1, 0, 7, 8, 9]
    assert "dimension 1" in _raises(
        impl, "CapacityError", IndexError, lambda: a.store(t, (1, 3), a.DevicePtr(1))
    )
    _raises(impl, "CapacityError", IndexError, lambda: a.store(t, (0, -1), a.DevicePtr(1)))
    _raises(impl, "CapacityError", IndexError, lambda: a.store(t, (0, 0, 0), a.DevicePtr(1)))
    _raises(impl, "LengthMismatchError", ValueError, lambda: a.store(t, 0, a.DevicePtr(1)))  # a row
    _raises(impl, "PtrTypeError", TypeError, lambda: a.store(t, (0, 1.0), a.DevicePtr(1)))
    a.store(t, (0, [0, 2]), [a.DevicePtr(3), a.DevicePtr(4)])  # ints along the last dimension
    a.store(t, (0, [0, 2]), [a.DevicePtr(1), a.DevicePtr(0)])
    assert table_bits(t) == [1, 2**64 - 1, 0, 7, 8, 9]


def case_store_refusals_write_nothing(impl: Impl) -> None:
    a, p = impl.api, impl.api.DevicePtr(HI)
    t = torch.zeros(4, dtype=torch.uint64)
    _raises(impl, "LengthMismatchError", ValueError, lambda: a.store(t, slice(0, 3), [p, p]))
    _raises(impl, "LengthMismatchError", ValueError, lambda: a.store(t, slice(0, 2), p))
    for raw in (5, 2**63, -8, np.uint64(5), 1.5, None, True):
        _raises(impl, "PtrTypeError", TypeError, lambda raw=raw: a.store(t, 0, raw))
    msg = _raises(impl, "PtrTypeError", TypeError, lambda: a.store(t, slice(0, 3), [p, FakeTensor(8), 5]))
    assert "[2]" in msg
    _raises(impl, "PtrTypeError", TypeError, lambda: a.store(t, slice(0, 1), np.array([1], dtype=np.int64)))
    for dtype in (torch.float32, torch.int32, torch.uint32):
        _raises(
            impl, "PtrTypeError", TypeError, lambda dtype=dtype: a.store(torch.zeros(2, dtype=dtype), 0, p)
        )
    _raises(impl, "PtrTypeError", TypeError, lambda: a.store(np.zeros(2, dtype=np.float64), 0, p))
    _raises(impl, "PtrTypeError", TypeError, lambda: a.store([0, 0], 0, p))
    assert table_bits(t) == [0, 0, 0, 0]


def case_store_refuses_read_only_and_sparse(impl: Impl) -> None:
    """Issue 22 item 18: a read-only array (``PtrBuffer.numpy()``) or a sparse tensor is a
    devptr error and nothing is written, not numpy's ValueError or torch's RuntimeError."""
    a, p = impl.api, impl.api.DevicePtr(HI)
    ro = np.zeros(4, dtype=np.uint64)
    ro.flags.writeable = False
    ro_view = np.zeros(4, dtype=np.int64)[::2]
    ro_view.flags.writeable = False
    for arr in (ro, ro_view):
        for index, value in ((0, p), (slice(0, 2), [p, p])):
            msg = _raises(
                impl,
                "PtrTypeError",
                TypeError,
                lambda arr=arr, index=index, value=value: a.store(arr, index, value),
            )
            assert "read-only" in msg
        assert not arr.any()
    dense = torch.zeros(4, dtype=torch.int64)
    with warnings.catch_warnings():  # torch: "Sparse CSR tensor support is in beta state"
        warnings.simplefilter("ignore", UserWarning)
        csr = dense.reshape(2, 2).to_sparse_csr()
    for sparse in (dense.to_sparse(), csr):
        _raises(impl, "PtrTypeError", TypeError, lambda sparse=sparse: a.store(sparse, 0, p))
        assert not sparse.to_dense().any()


CASES: dict[str, Callable[[Impl], None]] = {
    name.removeprefix("case_"): fn for name, fn in sorted(globals().items()) if name.startswith("case_")
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("which", ["core", "vendor", "copy"])
def test_parity(which: str, case: str, tmp_path: Path) -> None:
    CASES[case](make(which, tmp_path))


def test_core_reexports_the_vendor_module() -> None:
    """One implementation: the core's names are the module's objects, not copies."""
    import devptr
    from devptr import _encoding, _ptr, _store
    from devptr.vendor import ptrtable

    for name in (
        "DevicePtr",
        "Encoding",
        "encoding_for",
        "store",
        "DevPtrError",
        "PtrTypeError",
        "AddressRangeError",
        "AddressOverflowError",
        "CapacityError",
        "LengthMismatchError",
        "UnknownBackendError",
    ):
        assert getattr(devptr, name) is getattr(ptrtable, name), name
    assert _ptr.unsigned_address is ptrtable.unsigned_address and _store.store is ptrtable.store
    assert _encoding.BACKENDS is ptrtable.BACKENDS
    for core_only in ("InvalidValueError", "CheckedModeError", "StateError", "StaleBufferError"):
        assert issubclass(getattr(devptr, core_only), ptrtable.DevPtrError)


# Mutations of the module's source, each one of the old second implementation's divergences
# (issue 22 item 13), with the case that must catch it.
MUTATIONS = [
    (
        "    def __reduce__(self) -> tuple[type[DevicePtr], tuple[int]]: return DevicePtr, (self.addr,)\n",
        "",
        "pickle_copy_frozen",
    ),
    ('if hasattr(type(other), "__index__"):', "if False:", "compares_with_deviceptrs_only"),
    ("if not 0 <= b <= size - (not sl):", "if not -size <= b <= size + 9:", "store_never_wraps_or_clamps"),
    ('or ("=" in text) != bool(kind) or not _known(kind or "cpu"):', ":", "environment_is_strict"),
    (
        "Encoding.I64 if known or not default else default)",
        "Encoding.I64)",
        "encoding_default_for_unknown_types",
    ),
    (
        'raise PtrTypeError("store() needs a writable container',
        'raise ValueError("store() needs a writable container',
        "store_refuses_read_only_and_sparse",
    ),
]


@pytest.mark.parametrize(
    ("old", "new", "case"), MUTATIONS, ids=[m[2] + str(k) for k, m in enumerate(MUTATIONS)]
)
def test_the_cases_catch_divergence(old: str, new: str, case: str, tmp_path: Path) -> None:
    source = SOURCE.read_text(encoding="utf-8")
    assert source.count(old) == 1, f"mutation target not found once: {old!r}"
    mutant = load_copy(tmp_path, source.replace(old, new), name=f"mutant_{case}")
    with pytest.raises((Exception, pytest.fail.Exception)):
        CASES[case](Impl("mutant", mutant, env_setter(mutant, COPY_ENV_VAR), COPY_ENV_VAR))
    CASES[case](make("copy", tmp_path))  # the module as it is passes the same case
