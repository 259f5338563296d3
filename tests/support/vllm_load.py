"""Import ONE vLLM 0.33.0 module file, unmodified, for the differential tests.

:func:`load_vllm_module` executes a file of the unzipped wheel (found or fetched by
:func:`tools.wheel_sources.vllm_source_root`) under its real name, with the vLLM (or other
missing) modules it imports replaced by small stand-ins the caller names. Nothing of vLLM is
installed; the stand-ins are removed from ``sys.modules`` again once the module has executed
(the loaded module keeps its own references). A module that imports something at call time
can be run inside :func:`vllm_modules` with the same stand-ins.

Example::

    mod = load_vllm_module(
        "vllm.distributed.ec_transfer.ec_connector.cpu.worker.descriptor_buffers",
        {"vllm.platforms": {"current_platform": FakePlatform("cuda")}},
    )
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
import types
from collections.abc import Iterator, Mapping
from pathlib import Path

from tools.wheel_sources import SourceTreeError, vllm_source_root

StandIns = Mapping[str, "Mapping[str, object] | types.ModuleType"]
"""Module name -> the attributes its stand-in exposes (or a ready module object)."""


class VllmRefError(SourceTreeError):
    """A vLLM file could not be found, or imported with the given stand-ins."""


def _module(name: str, attrs: Mapping[str, object] | types.ModuleType) -> types.ModuleType:
    if isinstance(attrs, types.ModuleType):
        return attrs
    mod = types.ModuleType(name, f"devptr stand-in for {name}")
    mod.__dict__.update(attrs)
    return mod


def _package(name: str, root: Path) -> types.ModuleType:
    """An empty package whose ``__path__`` is the real folder (so files can be found)."""
    pkg = types.ModuleType(name, f"devptr stand-in package {name}")
    pkg.__path__ = [str(root.joinpath(*name.split(".")))]
    return pkg


@contextlib.contextmanager
def vllm_modules(stand_ins: StandIns, root: Path | None = None) -> Iterator[None]:
    """Install ``stand_ins`` (and empty parent packages of vLLM names) in ``sys.modules``.

    Everything installed is removed on exit and what was there before is restored.
    """
    root = vllm_source_root() if root is None else root
    wanted: dict[str, types.ModuleType] = {}
    for name, attrs in stand_ins.items():
        wanted[name] = _module(name, attrs)
    for name in list(wanted):
        parts = name.split(".")
        for i in range(1, len(parts)):
            parent = ".".join(parts[:i])
            if parent not in wanted:
                wanted[parent] = _package(parent, root)
    saved = {name: sys.modules.get(name) for name in wanted}
    before = set(sys.modules)
    sys.modules.update(wanted)
    try:
        yield
    finally:
        for name in set(sys.modules) - before - set(wanted):
            if name == "vllm" or name.startswith("vllm."):
                del sys.modules[name]  # real vLLM files pulled in through the stand-in packages
        for name, old in saved.items():
            if old is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = old


def load_vllm_module(name: str, stand_ins: StandIns | None = None) -> types.ModuleType:
    """Execute vLLM's file for module ``name`` unmodified, with ``stand_ins`` for its imports.

    Parameters
    ----------
    name
        Dotted module name, e.g. ``"vllm.v1.worker.mamba_utils"``.
    stand_ins
        Module name -> attributes (or a module) for every vLLM module the file imports
        (and any third-party module missing here). Parent packages are made up.

    Raises
    ------
    VllmRefError
        The file does not exist, or it imports a module that has no stand-in (the message
        names it).
    """
    root = vllm_source_root()
    rel = Path(*name.split("."))
    path = root / rel.with_suffix(".py")
    if not path.is_file():
        path = root / rel / "__init__.py"
    if not path.is_file():
        raise VllmRefError(f"no vLLM source file for {name} under {root}")
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise VllmRefError(f"cannot load {path}")
    mod = importlib.util.module_from_spec(spec)
    with vllm_modules(dict(stand_ins or {}), root):
        sys.modules[name] = mod
        try:
            spec.loader.exec_module(mod)
        except ImportError as exc:
            raise VllmRefError(
                f"{name} imports {exc.name or exc}: pass a stand-in for it in stand_ins"
            ) from exc
        finally:
            sys.modules.pop(name, None)
    return mod

