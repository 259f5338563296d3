"""How an address is encoded in a 64-bit integer container, per backend."""

from __future__ import annotations

import enum
import os
import threading
from typing import Final

import numpy as np
import torch

from devptr._errors import PtrTypeError, UnknownBackendError, describe


class Encoding(enum.Enum):
    """The integer type a consumer reads addresses as.

    ``U64``: unsigned (torch.uint64 / numpy uint64), the bits read as the address.
    ``I64``: signed int64 two's complement, the int64 ABI of CUDA/ROCm C++ ops and custom-op
    ``int`` arguments. Both have the same 64 bits; only the container's dtype differs.
    """

    U64 = "U64"
    I64 = "I64"

    @property
    def torch_dtype(self) -> torch.dtype:
        """``torch.uint64`` or ``torch.int64``."""
        return torch.uint64 if self is Encoding.U64 else torch.int64

    @property
    def numpy_dtype(self) -> np.dtype[np.unsignedinteger] | np.dtype[np.signedinteger]:
        """``numpy.uint64`` or ``numpy.int64``."""
        return np.dtype(np.uint64) if self is Encoding.U64 else np.dtype(np.int64)

    @classmethod
    def parse(cls, text: str) -> Encoding:
        """``"U64"``/``"I64"`` (any case) to an Encoding."""
        if not isinstance(text, str):
            raise PtrTypeError(f"an encoding name is a str (got {describe(text)})")
        key = text.strip().upper()
        try:
            return cls(key)
        except ValueError:
            raise UnknownBackendError(f"encoding must be 'U64' or 'I64' (got {text!r})") from None


ENV_VAR: Final = "DEVPTR_ENCODING"
"""``U64`` (every backend) or ``xpu=U64,cuda=I64`` (per backend)."""

# torch's device types; every one reads int64 tables except Intel XPU (Level Zero USM
# addresses have bit 63 set, its ops take uint64).
_DEFAULTS: Final[dict[str, Encoding]] = {
    name: Encoding.I64
    for name in (
        "cpu",
        "cuda",
        "hip",
        "mps",
        "meta",
        "mtia",
        "maia",
        "ipu",
        "hpu",
        "xla",
        "lazy",
        "vulkan",
        "ve",
        "fpga",
        "ort",
        "mkldnn",
        "opengl",
        "opencl",
        "ideep",
        "privateuseone",
    )
} | {"xpu": Encoding.U64}

_lock = threading.Lock()
_registered: dict[str, Encoding] = {}


def register_backend(name: str, encoding: Encoding) -> None:
    """Declare (or override) the default encoding of a backend's consumers.

    ``name`` is a device type such as ``"xpu"`` or an out-of-tree backend's registered name.
    """
    if not isinstance(name, str):
        raise PtrTypeError(f"backend name must be a str (got {describe(name)})")
    if not name or ":" in name:
        raise UnknownBackendError(
            f"backend name must be a device type such as 'xpu' (got {describe(name)})"
        )
    if not isinstance(encoding, Encoding):
        raise PtrTypeError(f"encoding must be an Encoding (got {describe(encoding)})")
    with _lock:
        _registered[name] = encoding


def _privateuse1_name() -> str | None:
    get = getattr(torch._C, "_get_privateuse1_backend_name", None)
    return str(get()) if get is not None else None


Overrides = tuple[Encoding | None, dict[str, Encoding]]
_env: Overrides | None = None  # DEVPTR_ENCODING, parsed at first use


def _parse_env(text: str) -> Overrides:
    """``DEVPTR_ENCODING``'s value: ``(encoding for every backend, per-backend encodings)``."""
    text = text.strip()
    if not text:
        return None, {}
    try:
        if "=" not in text:
            return Encoding.parse(text), {}
        per: dict[str, Encoding] = {}
        for part in text.split(","):
            part = part.strip()
            if not part:
                continue
            name, sep, enc = part.partition("=")
            if not sep or not name.strip():
                raise UnknownBackendError("a backend name is missing")
            per[name.strip()] = Encoding.parse(enc)
    except UnknownBackendError as exc:
        raise UnknownBackendError(
            f"environment variable {ENV_VAR}={text!r} is invalid: expected 'U64', 'I64' or "
            f"'backend=ENC,...' such as 'xpu=U64,cuda=I64' ({exc})"
        ) from None
    return None, per


def _env_overrides() -> Overrides:
    global _env
    env = _env
    if env is None:
        env = _env = _parse_env(os.environ.get(ENV_VAR, ""))
    return env


def reload_environment() -> None:
    """Re-read ``DEVPTR_ENCODING`` now (it is read once, at the first :func:`encoding_for`).

    For tests and tools that change the environment variable inside one process; see
    :func:`devptr.testing.encoding_environment` for a context manager that also restores
    it. Raises :class:`UnknownBackendError` for an invalid value.
    """
    global _env
    with _lock:
        _env = None
        _env_overrides()


def _device_type(device_or_type: object) -> str:
    if isinstance(device_or_type, str):
        if ":" not in device_or_type:
            return device_or_type
        try:
            return torch.device(device_or_type).type
        except (RuntimeError, ValueError):
            raise UnknownBackendError(f"not a device name: {device_or_type!r}") from None
    if isinstance(device_or_type, torch.device):
        return device_or_type.type
    if isinstance(device_or_type, torch.Tensor):
        return device_or_type.device.type
    raise PtrTypeError(
        f"expected a device type name, torch.device or tensor (got {describe(device_or_type)})"
    )


def encoding_for(
    device_or_type: str | torch.device | torch.Tensor, *, default: Encoding | None = None
) -> Encoding:
    """The default encoding of a backend's consumers: ``xpu`` -> U64, the rest -> I64.

    Resolution order: ``DEVPTR_ENCODING`` (environment, read once at the first call;
    :func:`reload_environment` re-reads it), then
    :func:`register_backend`, then the built-in table. An unknown name gives ``default``
    when one is given (``encoding_for(platform.device_type, default=Encoding.I64)`` keeps
    a per-platform branch's answer for device types devptr does not know, such as ``""``
    or ``"tpu"``; ``DEVPTR_ENCODING=U64`` still applies to them), else raises
    :class:`UnknownBackendError` (a ``ValueError``).
    """
    if default is not None and not isinstance(default, Encoding):
        raise PtrTypeError(f"default must be an Encoding or None (got {describe(default)})")
    name = _device_type(device_or_type)
    every, per = _env_overrides()
    if name in per:
        return per[name]
    known = name in _registered or name in _DEFAULTS or name == _privateuse1_name()
    if not known and default is None:
        raise UnknownBackendError(
            f"unknown backend {name!r}: expected a torch device type such as 'cuda' or 'xpu', "
            "or a name given to devptr.register_backend()"
        )
    if every is not None:
        return every
    if name in _registered:
        return _registered[name]
    return _DEFAULTS.get(name, default or Encoding.I64)
