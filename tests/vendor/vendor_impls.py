"""The implementations the parity suite runs against, and how to load a vendored copy.

- ``core``: devptr's public API (``import devptr``);
- ``vendor``: ``devptr.vendor.ptrtable``, the module the core re-exports;
- ``copy``: the same file copied into a temporary folder and imported under another name,
  the way an engine vendors it (its own module object and state, its own environment
  variable), so the file is shown to stand alone.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path

import devptr
import devptr.testing
from devptr.vendor import ptrtable

SOURCE = Path(ptrtable.__file__)
COPY_ENV_VAR = "VENDORED_PTR_ENCODING"
"""The environment variable the vendored copy is told to read (an embedding project's name)."""


def load_copy(tmp: Path, source: str | None = None, name: str = "vendored_ptrtable") -> types.ModuleType:
    """Write ``source`` (default: the module's own text) to ``tmp/name.py`` and import it."""
    path = tmp / f"{name}.py"
    path.write_text(SOURCE.read_text(encoding="utf-8") if source is None else source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # pickle finds classes by module name
    spec.loader.exec_module(module)
    return module


def _set(name: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


def env_setter(
    module: types.ModuleType, variable: str
) -> Callable[[str | None], contextlib.AbstractContextManager[None]]:
    """A context manager factory: run a block with ``variable`` set and re-read by ``module``."""

    @contextlib.contextmanager
    def run(value: str | None) -> Iterator[None]:
        old = os.environ.get(variable)
        _set(variable, value)
        try:
            module.use_environment(variable)
            yield
        finally:
            _set(variable, old)
            module.use_environment(variable)

    return run


class Impl:
    """One implementation under test: ``api`` has the names, ``env(value)`` sets its variable."""

    def __init__(
        self,
        name: str,
        api: types.ModuleType,
        env: Callable[[str | None], contextlib.AbstractContextManager[None]],
        variable: str,
    ) -> None:
        self.name, self.api, self.env, self.variable = name, api, env, variable

    def __repr__(self) -> str:
        return self.name


def make(name: str, tmp: Path) -> Impl:
    if name == "core":
        return Impl("core", devptr, devptr.testing.encoding_environment, "DEVPTR_ENCODING")
    if name == "vendor":
        return Impl("vendor", ptrtable, env_setter(ptrtable, ptrtable.ENV_VAR), ptrtable.ENV_VAR)
    copy = load_copy(tmp)
    return Impl("copy", copy, env_setter(copy, COPY_ENV_VAR), COPY_ENV_VAR)
