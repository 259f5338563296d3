"""Abstract values tracked by the checker's intra-function data flow.

The checker does not know types. It knows a few facts about expressions: this one is a raw
device address (a ``data_ptr()`` int), that one a list of them, this name holds a numpy
array whose dtype is uint64. Each fact is a :class:`Val`; what a function does with its
arguments is a :class:`Summary`.
"""

from __future__ import annotations

import enum

import attrs

from devptr.lint.engine._fix import Span


class Kind(enum.Enum):
    """What an expression is, as far as the checker can tell."""

    ADDR = "addr"
    """A raw address: ``t.data_ptr()``, arithmetic on it, ``int(...)`` of it."""

    ADDR_SEQ = "addr-seq"
    """A Python list/tuple/generator holding raw addresses (or rows containing them)."""

    ADDR_ARRAY = "addr-array"
    """A numpy array or tensor of addresses computed from a raw address."""

    ARRAY = "array"
    """A numpy array or torch tensor (``lib`` and ``dtype`` say which, when known)."""

    MAPPING = "mapping"
    """A dict-like container: storing an address in it is harmless."""

    PLAIN_LIST = "plain-list"
    """A Python list not (yet) known to hold addresses."""

    DTYPE = "dtype"
    """A dtype expression (``dtype`` says which)."""

    DEVPTR = "devptr"
    """A ``devptr.DevicePtr`` (checked value)."""

    ADDR_FUNC = "addr-func"
    """A callable returning a raw address (lambda or local helper)."""

    ADDR_SEQ_FUNC = "addr-seq-func"
    """A callable returning a list of raw addresses."""

    TUPLE = "tuple"
    """A tuple of values (from a tuple literal or an annotated return)."""

    PARAM = "param"
    """While summarizing a function: a value derived from its parameters (``params``)."""


class Lib(enum.Enum):
    """Container library."""

    TORCH = "torch"
    NUMPY = "numpy"
    CTYPES = "ctypes"
    """``ctypes.cast(p, POINTER(c_int64))`` and ``(c_int64 * n)()``: stores keep the bits."""
    PYARRAY = "array"
    """``array.array("q"/"Q", ...)``."""


class DType(enum.Enum):
    """Element type classes that matter for addresses."""

    U64 = "uint64"
    I64 = "int64"
    OTHER = "other"
    BRANCH = "per-platform"
    """``torch.uint64 if is_xpu() else torch.int64``: int64 on CUDA/ROCm, uint64 on XPU."""


@attrs.frozen
class Val:
    """One abstract value.

    Parameters
    ----------
    kind
        What the expression is.
    lib
        For arrays: torch or numpy, when known.
    dtype
        For arrays and dtypes: the element type class, when known.
    np_scalar
        For addresses: the value is a ``np.uint64`` scalar rather than a Python int.
    checked
        For addresses taken from a DevicePtr: which encoding the int is in.
    items
        For tuples: the element values.
    """

    kind: Kind
    lib: Lib | None = None
    dtype: DType | None = None
    np_scalar: bool = False
    items: tuple[Val | None, ...] = ()
    by_name: bool = False
    """An address only because its name says so (``base_addr``, ``src_ptrs``)."""
    checked: DType | None = None
    """For addresses already encoded: ``U64`` for ``DevicePtr.addr``, ``I64`` for
    ``DevicePtr.signed`` and two's-complement helpers."""
    host: bool = False
    """A host address (mmap'd, pinned, registered, ``ctypes.addressof``): below 2**47."""
    params: frozenset[int] = frozenset()
    """For ``PARAM`` values: the parameter positions the value derives from."""


@attrs.frozen
class ParamSink:
    """A function parameter that reaches a table sink inside the function.

    At a call site whose argument carries addresses, the sink's verdict is computed with
    the argument's value and reported at the argument.
    """

    param: int
    name: str
    kind: str
    """``"store"``, ``"table"`` or ``"fill"``."""
    cont: Val | None = None
    dtype: DType | None = None
    ctor: str = ""
    is_slice: bool = False
    where: str = ""
    """``path:line`` of the sink, for the message."""
    span: Span | None = None
    """The sink expression in its module (where a finding reached through callers is
    reported, once)."""


@attrs.frozen
class Summary:
    """What the engine knows about a function from its body (or its annotation)."""

    returns: Val | None = None
    """The value of a call when it does not depend on the arguments."""
    params: tuple[str, ...] = ()
    """Positional parameter names (``self``/``cls`` of methods dropped)."""
    returns_params: frozenset[int] = frozenset()
    """Parameters whose (address) value the function returns, possibly offset."""
    twos_params: frozenset[int] = frozenset()
    """Parameters whose two's complement the function returns (an encoder)."""
    sinks: tuple[ParamSink, ...] = ()

    @property
    def exported(self) -> bool:
        """Whether callers in other modules learn something about addresses from it."""
        returns_addr = self.returns is not None and self.returns.kind in (
            Kind.ADDR, Kind.ADDR_SEQ, Kind.ADDR_ARRAY, Kind.ADDR_FUNC, Kind.ADDR_SEQ_FUNC
        )
        if self.returns is not None and self.returns.kind is Kind.TUPLE:
            returns_addr = any(
                v is not None and v.kind in (Kind.ADDR, Kind.ADDR_SEQ, Kind.ADDR_ARRAY)
                for v in self.returns.items
            )
        return bool(returns_addr or self.twos_params or self.sinks)

    @property
    def source(self) -> bool:
        """Whether calling it yields addresses (not only named so) whatever the arguments."""
        return self.returns is not None and self.returns.kind in (
            Kind.ADDR, Kind.ADDR_SEQ, Kind.ADDR_ARRAY
        ) and not self.returns.by_name

    @property
    def interesting(self) -> bool:
        """Whether callers learn anything from this summary."""
        return bool(
            self.returns is not None or self.returns_params or self.twos_params or self.sinks
        )


ADDR = Val(Kind.ADDR)
ADDR_SEQ = Val(Kind.ADDR_SEQ)
MAPPING = Val(Kind.MAPPING)
PLAIN_LIST = Val(Kind.PLAIN_LIST)
DEVPTR = Val(Kind.DEVPTR)


def is_addr(v: Val | None) -> bool:
    """Whether *v* is a raw scalar address."""
    return v is not None and v.kind is Kind.ADDR


def is_param(v: Val | None) -> bool:
    """Whether *v* derives from a parameter of the function being summarized."""
    return v is not None and v.kind is Kind.PARAM


def is_arrayish(v: Val | None) -> bool:
    """Whether *v* is a numpy array or tensor (of addresses or not)."""
    return v is not None and v.kind in (Kind.ARRAY, Kind.ADDR_ARRAY)


def carries_address(value: Val | None) -> bool:
    """Whether *value* is, or holds, raw addresses."""
    if value is None:
        return False
    if value.kind in (Kind.ADDR, Kind.ADDR_SEQ, Kind.ADDR_ARRAY):
        return True
    if value.kind is Kind.TUPLE:
        return any(carries_address(v) for v in value.items)
    return False


def is_host(value: Val | None) -> bool:
    """Whether every address in *value* is a host address."""
    if value is None:
        return False
    if value.kind is Kind.TUPLE:
        found = [v for v in value.items if carries_address(v)]
        return bool(found) and all(is_host(v) for v in found)
    return value.host
