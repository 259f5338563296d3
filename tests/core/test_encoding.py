"""Encoding and the backend registry."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from devptr import (
    DevPtrError,
    Encoding,
    PtrTypeError,
    UnknownBackendError,
    encoding_for,
    register_backend,
)
from devptr._encoding import reload_environment
from devptr.testing import encoding_environment


def test_dtypes() -> None:
    assert Encoding.U64.torch_dtype is torch.uint64
    assert Encoding.I64.torch_dtype is torch.int64
    assert Encoding.U64.numpy_dtype == np.uint64
    assert Encoding.I64.numpy_dtype == np.int64


@pytest.mark.parametrize(
    ("dev", "enc"),
    [
        ("xpu", Encoding.U64),
        ("cuda", Encoding.I64),
        ("cpu", Encoding.I64),
        ("hip", Encoding.I64),
        ("cuda:1", Encoding.I64),
        ("xpu:0", Encoding.U64),
        (torch.device("cpu"), Encoding.I64),
        (torch.zeros(1), Encoding.I64),
    ],
)
def test_defaults(dev: object, enc: Encoding, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DEVPTR_ENCODING", raising=False)
    assert encoding_for(dev) is enc  # type: ignore[arg-type]


def test_unknown_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DEVPTR_ENCODING", raising=False)
    with pytest.raises(UnknownBackendError, match="unknown backend 'tpu9'") as info:
        encoding_for("tpu9")
    assert isinstance(info.value, ValueError) and isinstance(info.value, DevPtrError)
    with pytest.raises(PtrTypeError):
        encoding_for(3)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["", "tpu", "npu", "musa"])
def test_unknown_backend_with_default(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # vLLM's platforms report these; a per-platform branch gave them int64, and so does
    # encoding_for(..., default=...) instead of raising at import time.
    monkeypatch.delenv("DEVPTR_ENCODING", raising=False)
    assert encoding_for(name, default=Encoding.I64) is Encoding.I64
    assert encoding_for(name, default=Encoding.U64) is Encoding.U64
    assert encoding_for("xpu", default=Encoding.I64) is Encoding.U64  # known: the table
    assert encoding_for("cuda", default=Encoding.U64) is Encoding.I64
    with encoding_environment("U64"):
        assert encoding_for(name, default=Encoding.I64) is Encoding.U64
    with pytest.raises(PtrTypeError, match="an Encoding default"):
        encoding_for(name, default="I64")  # type: ignore[arg-type]


def test_register_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DEVPTR_ENCODING", raising=False)
    register_backend("mybackend_u", Encoding.U64)
    assert encoding_for("mybackend_u") is Encoding.U64
    register_backend("mybackend_u", Encoding.I64)
    assert encoding_for("mybackend_u") is Encoding.I64
    with pytest.raises(UnknownBackendError):
        register_backend("bad:0", Encoding.U64)
    with pytest.raises(PtrTypeError):
        register_backend("ok", "U64")  # type: ignore[arg-type]


def test_env_override() -> None:
    with encoding_environment("U64"):
        assert encoding_for("cuda") is Encoding.U64
    with encoding_environment("xpu=I64, cuda=U64"):
        assert encoding_for("cuda") is Encoding.U64
        assert encoding_for("xpu") is Encoding.I64
        assert encoding_for("cpu") is Encoding.I64
    with encoding_environment("U64"), pytest.raises(UnknownBackendError):
        encoding_for("tpu9")


@pytest.mark.parametrize(
    "value",
    ["U65", "garbage", "xpu=U64,=I64", "xpu=U65", "XPU=I64", "CUDA=U64", "cuda:0=U64", "cdua=U64", "U64,I64"],
)
def test_invalid_env_names_the_variable_and_its_value(value: str) -> None:
    """Issue 22 item 21: a backend name that is not a torch device type (case included, no
    index) or a registered one is an error, never silently ignored."""
    with pytest.raises(UnknownBackendError) as info, encoding_environment(value):
        pass
    assert "DEVPTR_ENCODING" in str(info.value) and repr(value) in str(info.value)
    assert isinstance(info.value, ValueError)


def test_env_is_read_once_until_reloaded(monkeypatch: pytest.MonkeyPatch) -> None:
    with encoding_environment(None):
        assert encoding_for("cuda") is Encoding.I64
        monkeypatch.setenv("DEVPTR_ENCODING", "U64")
        assert encoding_for("cuda") is Encoding.I64  # not re-read per call
        reload_environment()
        assert encoding_for("cuda") is Encoding.U64
        monkeypatch.delenv("DEVPTR_ENCODING")
        reload_environment()
        assert encoding_for("cuda") is Encoding.I64
    assert os.environ.get("DEVPTR_ENCODING") is None or encoding_for("cpu") is not None


def test_encoding_environment_restores_the_registry() -> None:
    with encoding_environment(None):
        register_backend("scratch_backend", Encoding.U64)
        assert encoding_for("scratch_backend") is Encoding.U64
    with pytest.raises(UnknownBackendError):
        encoding_for("scratch_backend")


def test_env_may_name_a_registered_backend() -> None:
    with encoding_environment(None):
        register_backend("mybackend_env", Encoding.I64)
        os.environ["DEVPTR_ENCODING"] = "mybackend_env=U64"
        try:
            reload_environment()
            assert encoding_for("mybackend_env") is Encoding.U64
        finally:
            del os.environ["DEVPTR_ENCODING"]


@pytest.mark.parametrize("dev", ["", "tpu", "npu", "npu:0"])
def test_default_for_device_types_the_registry_does_not_know(dev: str) -> None:
    """``encoding_for(t, default=...)``: what a per-platform branch gave for other types."""
    with encoding_environment(None):
        assert encoding_for(dev, default=Encoding.I64) is Encoding.I64
        assert encoding_for(dev, default=Encoding.U64) is Encoding.U64
        with pytest.raises(UnknownBackendError):
            encoding_for(dev)
        assert encoding_for("xpu", default=Encoding.I64) is Encoding.U64
        with pytest.raises(PtrTypeError):
            encoding_for(dev, default="I64")  # type: ignore[arg-type]
