"""Host uint64 storage (optionally pinned) with an optional device mirror.

Shared by :class:`PtrBuffer` and :class:`PtrTable`. The host tensor owns the memory; the
numpy array is a zero-copy alias of it; the device mirror is a separate allocation that
:meth:`Storage.copy_to_device` fills with one host-to-device copy.
"""

from __future__ import annotations

import numpy as np
import torch

from devptr._convert import U64Array
from devptr._errors import CapacityError, DevPtrError, PtrTypeError, describe


def accelerator_available() -> bool:
    """Whether torch sees an accelerator that can pin host memory."""
    acc = getattr(torch, "accelerator", None)
    if acc is not None and hasattr(acc, "is_available"):
        return bool(acc.is_available())
    return bool(torch.cuda.is_available())


def _alloc_host(shape: tuple[int, ...], pin_memory: bool | None) -> tuple[torch.Tensor, bool]:
    if pin_memory is None:
        pin_memory = accelerator_available()
    if not pin_memory:
        return torch.zeros(shape, dtype=torch.uint64), False
    try:
        return torch.zeros(shape, dtype=torch.uint64, pin_memory=True), True
    except RuntimeError as exc:
        raise DevPtrError(
            "pinned host memory needs an accelerator, and torch found none "
            f"({exc.__class__.__name__}: {str(exc).splitlines()[0]}); "
            "pass pin_memory=None to pin only when possible, or pin_memory=False"
        ) from None


class Storage:
    """The memory behind a buffer: ``rows`` entries of ``cols`` 64-bit words each.

    ``cols == 0`` means a 1-D table (a :class:`PtrBuffer`). Not thread-safe: one writer.
    """

    __slots__ = ("_event", "_event_obj", "device", "host", "mirror", "np", "pinned", "rows")

    def __init__(
        self,
        rows: int,
        cols: int = 0,
        *,
        device: str | torch.device | None = None,
        pin_memory: bool | None = None,
    ) -> None:
        if type(rows) is not int or rows < 0:
            raise CapacityError(f"capacity must be a non-negative int (got {describe(rows)})")
        shape = (rows,) if cols == 0 else (rows, cols)
        self.rows = rows
        self.host, self.pinned = _alloc_host(shape, pin_memory)
        self.np: U64Array = self.host.numpy()
        self.device: torch.device | None = None
        self.mirror: torch.Tensor | None = None
        self._event: torch.Event | None = None  # set while an async copy may read the host
        self._event_obj: torch.Event | None = None  # created once, recorded per copy
        if device is not None:
            try:
                dev = torch.device(device)
            except (RuntimeError, TypeError) as exc:
                raise PtrTypeError(
                    f"device must be a torch device (got {describe(device)}): {exc}"
                ) from None
            if dev.type != "cpu" and dev.index is None and dev.type == "cuda":
                dev = torch.device("cuda", torch.cuda.current_device())
            self.device = dev
            self.mirror = torch.zeros(shape, dtype=torch.uint64, device=dev)

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
        if self.mirror is None:
            raise DevPtrError("this buffer has no device mirror: construct it with device=...")
        if n == 0:
            return
        src = self.host[:n].view(torch.int64)
        dst = self.mirror[:n].view(torch.int64)
        asynchronous = non_blocking and self.pinned and dst.device.type != "cpu"
        dst.copy_(src, non_blocking=asynchronous)
        if asynchronous:
            ev = self._event_obj
            if ev is None:
                event_cls = getattr(getattr(torch, dst.device.type, None), "Event", None)
                if event_cls is None:
                    torch.accelerator.synchronize()
                    return
                ev = self._event_obj = event_cls()
            ev.record()
            self._event = ev


def check_encoding_arg(encoding: object) -> None:
    """Raise unless ``encoding`` is an Encoding or None."""
    from devptr._encoding import Encoding

    if encoding is not None and not isinstance(encoding, Encoding):
        raise PtrTypeError(f"encoding must be an Encoding or None (got {describe(encoding)})")


def as_readonly(arr: np.ndarray) -> np.ndarray:
    """A read-only view of ``arr``."""
    v = arr.view()
    v.flags.writeable = False
    return v
