"""Host uint64 storage (optionally pinned) with an optional device mirror; device resolution.

The memory behind every table (:class:`~devptr._table_base.TableBase`: PtrBuffer, PtrTable,
SizeBuffer, the EC descriptor buffers). The host tensor owns the memory; the numpy array
is a zero-copy alias of it; the device mirror is a separate allocation that
:meth:`Storage.copy_to_device` fills with one host-to-device copy.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TypeVar

import numpy as np
import numpy.typing as npt
import torch

from devptr._convert import U64Array, index_value
from devptr._errors import PtrTypeError, StateError, UnknownBackendError, describe

ScalarT = TypeVar("ScalarT", bound=np.generic)


def accelerator_available() -> bool:
    """Whether torch sees an accelerator that can pin host memory."""
    acc = getattr(torch, "accelerator", None)
    if acc is not None and hasattr(acc, "is_available"):
        return bool(acc.is_available())
    return bool(torch.cuda.is_available())


def current_device() -> torch.device:
    """The current accelerator device (with its index), or the CPU when torch sees none."""
    acc = getattr(torch, "accelerator", None)
    if acc is not None and acc.is_available():
        dev = acc.current_accelerator()
        index = getattr(acc, "current_device_index", None) or getattr(acc, "current_device_idx", None)
        if dev is not None:
            return torch.device(dev.type, index()) if index is not None else torch.device(dev.type)
    if torch.cuda.is_available():
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def resolve_device(device: object) -> torch.device:
    """``device`` as a torch.device; a bare ``"cuda"`` gets the current CUDA index.

    The one place devptr turns a user's device argument into a device (tables, pools,
    :func:`~devptr.ptr_tensor`, the adapters, ``devptr selftest``). A device is a
    :class:`torch.device` or a name such as ``"cuda:0"``; anything else, an int index
    included (``torch.device(0)`` means an accelerator on CUDA builds and fails on CPU
    ones), is a :class:`PtrTypeError`; a name torch does not know (``"gpu"``) is an
    :class:`UnknownBackendError`; a bare ``"cuda"`` without a CUDA runtime is a
    :class:`StateError` (a RuntimeError), never torch's own exception.
    """
    if isinstance(device, torch.device):
        dev = device
    elif isinstance(device, str):
        try:
            dev = torch.device(device)
        except (RuntimeError, TypeError, ValueError) as exc:
            raise UnknownBackendError(
                f"unknown device {device!r}: expected a torch device such as 'cpu', 'cuda:0' or "
                f"'xpu:0' ({_first_line(exc)})"
            ) from None
    else:
        raise PtrTypeError(
            f"device must be a torch.device or a device name such as 'cuda:0' (got {describe(device)})"
        )
    if dev.type == "cuda" and dev.index is None:
        try:
            dev = torch.device("cuda", torch.cuda.current_device())
        except (RuntimeError, AssertionError) as exc:
            raise device_unavailable(dev, exc) from None
    return dev


def reachable_device(device: object) -> torch.device:
    """:func:`resolve_device`, then check that torch can allocate there (one byte).

    For callers that must fail before they start (``devptr selftest``, the Lamport
    workspace): a device whose driver, build or index is missing is a :class:`StateError`.
    """
    dev = resolve_device(device)
    if dev.type != "cpu":
        try:
            torch.empty(1, dtype=torch.uint8, device=dev)
        except Exception as exc:  # torch raises AssertionError, RuntimeError, NotImplementedError...
            raise device_unavailable(dev, exc) from None
    return dev


def device_unavailable(dev: torch.device | str, exc: BaseException) -> StateError:
    """The StateError for a device torch cannot reach (its driver or build is missing)."""
    return StateError(f"device {str(dev)!r} is not available ({_first_line(exc)})")


def _first_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0]}"


def allocation_failed(shape: tuple[int, ...], where: str, exc: BaseException) -> StateError:
    """The StateError for memory torch could not allocate (too large, or none left)."""
    words = 1
    for d in shape:
        words *= d
    return StateError(
        f"could not allocate {where} memory for {' x '.join(map(str, shape))} 64-bit words "
        f"({words * 8} bytes): {_first_line(exc)}"
    )


def _zeros(shape: tuple[int, ...], where: str, pin_memory: bool = False) -> torch.Tensor:
    try:
        return torch.zeros(shape, dtype=torch.uint64, pin_memory=pin_memory)
    except (RuntimeError, TypeError, OverflowError) as exc:  # MemoryError-like: too large
        raise allocation_failed(shape, where, exc) from None


def _alloc_host(shape: tuple[int, ...], pin_memory: bool | None) -> tuple[torch.Tensor, bool]:
    if pin_memory is None:
        pin_memory = accelerator_available()
    if not pin_memory:
        return _zeros(shape, "host"), False
    if not accelerator_available():
        raise StateError(
            "pinned host memory needs an accelerator, and torch found none; "
            "pass pin_memory=None to pin only when possible, or pin_memory=False"
        )
    return _zeros(shape, "pinned host", pin_memory=True), True


class Storage:
    """The memory behind a buffer: ``rows`` entries of ``cols`` 64-bit words each.

    ``cols == 0`` means a 1-D table (a :class:`PtrBuffer`). Not thread-safe: one writer.
    """

    __slots__ = (
        "_async",
        "_cut",
        "_event",
        "_event_obj",
        "_h64",
        "_m64",
        "_track",
        "_views",
        "derived",
        "device",
        "host",
        "mirror",
        "np",
        "pinned",
        "rows",
    )

    _cut: tuple[int, torch.Tensor, torch.Tensor] | None
    """The last upload's row count and its (mirror, host) int64 slices (reused while the
    count stays the same: a step of an engine uploads the same rows every time)."""
    _views: dict[tuple[int, torch.dtype], torch.Tensor]
    """Mirror views of a table's rows per dtype (:meth:`mirror_rows`)."""
    derived: dict[str, object]
    """What a table built on this memory keeps for as long as the memory lives, by name
    (the EC connector's captured swap graphs, which hold these addresses); dropped with
    the storage, never copied by :meth:`clone`."""

    def __init__(
        self,
        rows: int,
        cols: int = 0,
        *,
        device: str | torch.device | None = None,
        pin_memory: bool | None = None,
    ) -> None:
        rows = index_value(rows, "capacity", None)
        shape = (rows,) if cols == 0 else (rows, cols)
        self.rows = rows
        self.host, self.pinned = _alloc_host(shape, pin_memory)
        self.np: U64Array = self.host.numpy()
        self.device: torch.device | None = None
        self.mirror: torch.Tensor | None = None
        self._event: torch.Event | None = None  # set while an async copy may read the host
        self._event_obj: torch.Event | None = None  # created once, recorded per copy
        if device is not None:
            dev = resolve_device(device)
            try:
                self.mirror = torch.zeros(shape, dtype=torch.uint64, device=dev)
            except torch.OutOfMemoryError as exc:
                raise allocation_failed(shape, f"{dev} device", exc) from None
            except (RuntimeError, AssertionError) as exc:
                raise device_unavailable(dev, exc) from None
            self.device = dev
        self._derive()

    def _derive(self) -> None:
        """The views every upload reads, made once (host and mirror never change)."""
        self._h64 = self.host.view(torch.int64)
        self._m64 = None if self.mirror is None else self.mirror.view(torch.int64)
        self._async = self.pinned and self.device is not None and self.device.type != "cpu"
        self._cut = None
        self._views = {}
        self._track = True
        self.derived = {}

    def clone(self) -> Storage:
        """A new storage of the same shape, device and pinning holding a copy of this one."""
        self.wait_host()
        new = object.__new__(Storage)
        new.rows = self.rows
        new.host = self.host.clone()
        if self.pinned:
            new.host = new.host.pin_memory()
        new.pinned = self.pinned
        new.np = new.host.numpy()
        new.device = self.device
        new.mirror = None if self.mirror is None else self.mirror.clone()
        new._event = new._event_obj = None
        new._derive()
        return new

    def clear(self, rows: int) -> None:
        """Zero the first ``rows`` rows, host and device mirror (a pool hands storage over)."""
        self.wait_host()
        self.np[:rows] = 0
        if self.mirror is not None and rows:
            self.mirror[:rows].zero_()

    def wait_host(self) -> None:
        """Block until an in-flight asynchronous copy from the host memory has finished."""
        ev = self._event
        if ev is not None:
            ev.synchronize()
            self._event = None

    def copy_to_device(self, n: int, non_blocking: bool) -> None:
        """Copy the first ``n`` rows host -> device mirror (one copy).

        With pinned memory and ``non_blocking`` the copy is asynchronous; the next host
        write through the owning buffer waits for it, so the copy never sees later data.
        """
        cut = self._cut
        if cut is None or cut[0] != n:
            if self._m64 is None:
                raise no_mirror()
            if n == 0:
                return
            cut = self._cut = (n, self._m64[:n], self._h64[:n])
        asynchronous = non_blocking and self._async
        cut[1].copy_(cut[2], non_blocking=asynchronous)
        if asynchronous and self._track:
            self.note_async_read()

    def note_async_read(self, done: torch.Event | None = None) -> None:
        """Mark that work on the current stream reads the host memory (an asynchronous
        upload, or a replayed graph holding one): the next host write waits for it.

        ``done``: an event that work records itself once it has read the memory (a graph's
        event-record node after its upload), waited for instead of one recorded here."""
        if done is not None:
            self._event = done
            return
        ev = self._event_obj
        if ev is None:
            assert self.device is not None  # only tables with a mirror copy asynchronously
            ev = _event(self.device)
            if ev is None:
                torch.accelerator.synchronize()
                return
            self._event_obj = ev
        ev.record()
        self._event = ev

    @contextlib.contextmanager
    def untracked(self) -> Iterator[None]:
        """Uploads inside the block leave no event behind (they are being captured into a
        graph, not run; the replay calls :meth:`note_async_read`)."""
        self._track = False
        try:
            yield
        finally:
            self._track = True

    def mirror_rows(self, rows: int, dtype: torch.dtype) -> torch.Tensor:
        """The mirror's first ``rows`` rows as ``dtype`` (made once per rows and dtype).

        The caller slices it (``[:count]``), so the cached view itself is never handed out.
        """
        key = (rows, dtype)
        view = self._views.get(key)
        if view is None:
            if self.mirror is None:
                raise no_mirror()
            if len(self._views) >= 8:  # pooled storage serves tables of many sizes
                self._views.clear()
            view = self._views[key] = self.mirror[:rows].view(dtype)
        return view


def _event(device: torch.device) -> torch.Event | None:
    """An event of ``device`` whose ``record()`` marks the current stream of that device.

    ``torch.Event`` where torch has it: its ``record()`` finds the stream in C++, where
    ``torch.cuda.Event.record()`` builds a Python ``Stream`` first (``current_stream()``),
    about 10 us of host time per upload on an H200's host. Else the device module's event
    class; None when there is neither."""
    generic = getattr(torch, "Event", None)
    if generic is not None:
        try:
            return generic(device)  # type: ignore[no-any-return]
        except (RuntimeError, TypeError, ValueError):
            pass
    event_cls = getattr(getattr(torch, device.type, None), "Event", None)
    return None if event_cls is None else event_cls()


def no_mirror(what: str = "table") -> StateError:
    """The StateError for a mirror view or upload of ``what`` (a table built without a device
    mirror)."""
    return StateError(f"this {what} has no device mirror: construct it with device=...")


def as_readonly(arr: npt.NDArray[ScalarT]) -> npt.NDArray[ScalarT]:
    """A read-only view of ``arr``."""
    v = arr.view()
    v.flags.writeable = False
    return v


def check_encoding_arg(encoding: object) -> None:
    """Raise unless ``encoding`` is an Encoding or None."""
    from devptr._encoding import Encoding

    if encoding is not None and not isinstance(encoding, Encoding):
        raise PtrTypeError(f"encoding must be an Encoding or None (got {describe(encoding)})")
