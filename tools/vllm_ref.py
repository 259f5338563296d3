"""vLLM 0.33.0's own code, for differential tests and benchmarks (never committed here).

Two things live here, in one place for tests, benchmarks and the RFC tooling:

- :func:`vllm_source_root`: a folder holding the unzipped ``vllm/`` sources of the 0.33.0
  wheel. Looked up in this order: ``$DEVPTR_VLLM_TREE`` (the ``vllm/`` package folder, as
  CI exports it), ``$DEVPTR_VLLM_SRC`` (the folder *containing* ``vllm/``), a cache folder
  ``$DEVPTR_CACHE_DIR/vllm-0.33.0`` (default ``<tempdir>/devptr-cache``); otherwise the wheel
  is downloaded there with ``pip download --no-deps vllm==0.33.0`` and its ``.py`` files
  are unzipped.
- :func:`load_vllm_module`: import ONE vLLM module file, unmodified, under its real name,
  with the vLLM (or other missing) modules it imports replaced by small stand-ins the
  caller names. Nothing of vLLM is installed; the stand-ins are removed from
  ``sys.modules`` again once the module has executed (the loaded module keeps its own
  references). A module that imports something at call time can be run inside
  :func:`vllm_modules` with the same stand-ins.

Example::

    mod = load_vllm_module(
        "vllm.distributed.ec_transfer.ec_connector.cpu.worker.descriptor_buffers",
        {"vllm.platforms": {"current_platform": FakePlatform("cuda")}},
    )
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import subprocess
import sys
import tempfile
import types
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path

VLLM_VERSION = "0.33.0"
_MIN_PY_FILES = 3000  # the 0.33.0 wheel holds 3,231 .py files under vllm/

StandIns = Mapping[str, "Mapping[str, object] | types.ModuleType"]
"""Module name -> the attributes its stand-in exposes (or a ready module object)."""


class VllmRefError(RuntimeError):
    """The vLLM sources could not be found, fetched, or imported with the given stand-ins."""


def _cache_root() -> Path:
    base = os.environ.get("DEVPTR_CACHE_DIR") or os.path.join(tempfile.gettempdir(), "devptr-cache")
    return Path(base)


def is_complete(root: Path) -> bool:
    """Whether ``root`` holds a complete ``vllm/`` source tree of the expected version."""
    pkg = root / "vllm"
    if not (pkg / "__init__.py").is_file():
        return False
    record = next(root.glob(f"vllm-{VLLM_VERSION}.dist-info/RECORD"), None)
    if record is None:
        return sum(1 for _ in pkg.rglob("*.py")) >= _MIN_PY_FILES
    wanted = [
        line.split(",", 1)[0]
        for line in record.read_text().splitlines()
        if line.startswith("vllm/") and line.split(",", 1)[0].endswith(".py")
    ]
    return bool(wanted) and all((root / name).is_file() for name in wanted)


def vllm_wheel(dest: Path | None = None) -> Path:
    """vLLM 0.33.0's wheel, downloaded into ``dest`` (default: the cache folder) once."""
    dest = _cache_root() / f"vllm-{VLLM_VERSION}" if dest is None else dest
    dest.mkdir(parents=True, exist_ok=True)
    wheels = sorted(dest.glob(f"vllm-{VLLM_VERSION}-*.whl"))
    if not wheels:
        cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps",
               f"vllm=={VLLM_VERSION}", "-d", str(dest)]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise VllmRefError(f"`{' '.join(cmd)}` failed:\n{done.stderr[-2000:]}")
        wheels = sorted(dest.glob(f"vllm-{VLLM_VERSION}-*.whl"))
    if not wheels:
        raise VllmRefError(f"pip download produced no vllm {VLLM_VERSION} wheel in {dest}")
    return wheels[0]


def _download(dest: Path) -> None:
    with zipfile.ZipFile(vllm_wheel(dest)) as zf:
        members = [
            m for m in zf.namelist()
            if (m.startswith("vllm/") and m.endswith(".py")) or ".dist-info/" in m
        ]
        zf.extractall(dest, members)


def vllm_source_root() -> Path:
    """The folder that contains vLLM 0.33.0's ``vllm/`` package sources (see module doc)."""
    tree = os.environ.get("DEVPTR_VLLM_TREE")
    if tree:
        pkg = Path(tree)
        if not (pkg / "__init__.py").is_file():
            raise VllmRefError(f"DEVPTR_VLLM_TREE={tree} is not a vllm/ package folder")
        return pkg.parent
    given = os.environ.get("DEVPTR_VLLM_SRC")
    if given:
        root = Path(given)
        if not is_complete(root):
            raise VllmRefError(f"DEVPTR_VLLM_SRC={given} has no complete vllm/ tree")
        return root
    cached = _cache_root() / f"vllm-{VLLM_VERSION}"
    if not is_complete(cached):
        _download(cached)
    if not is_complete(cached):
        raise VllmRefError(f"unzipped vllm {VLLM_VERSION} in {cached} is incomplete")
    return cached


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


if __name__ == "__main__":
    print(vllm_source_root())
