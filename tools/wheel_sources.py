"""Third-party source trees (vLLM, sglang, LMCache) from their wheels: the one place that
downloads one, for tests, benchmarks and CI alike (nothing of them is ever committed).

:func:`source_root` returns a folder that *contains* the package folder (``vllm/``...).
Looked up in this order:

- vLLM only: ``$DEVPTR_VLLM_TREE`` (the ``vllm/`` package folder itself, as CI exports it),
  then ``$DEVPTR_VLLM_SRC`` (the folder containing ``vllm/``);
- a complete unzipped copy in the cache folder ``$DEVPTR_CACHE_DIR/<dist>-<version>``
  (default ``<tempdir>/devptr-cache``);
- otherwise the wheel is downloaded there (``pip download --no-deps``, which needs the
  package index), its package sources and ``.dist-info`` unzipped next to it, and the
  downloaded wheel deleted.

Command line: ``python -m tools.wheel_sources [NAME]`` prints the package folder of NAME
(default ``vllm``), downloading it first when needed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Tree:
    """One wheel's sources: distribution name and version, package folder, a size floor."""

    dist: str
    version: str
    package: str
    min_py_files: int
    """A complete tree without a RECORD holds at least this many ``.py`` files."""

    @property
    def requirement(self) -> str:
        return f"{self.dist}=={self.version}"

    @property
    def folder_name(self) -> str:
        return f"{self.dist}-{self.version}"


TREES: dict[str, Tree] = {
    "vllm": Tree("vllm", "0.33.0", "vllm", 3000),  # the 0.33.0 wheel holds 3,231 .py files
    "sglang": Tree("sglang", "0.5.23", "sglang", 500),
    "lmcache": Tree("lmcache", "0.5.6", "lmcache", 100),
}
VLLM_VERSION = TREES["vllm"].version


class SourceTreeError(RuntimeError):
    """A source tree could not be found or fetched (the message says which and why)."""


def cache_root() -> Path:
    """``$DEVPTR_CACHE_DIR``, default ``<tempdir>/devptr-cache``."""
    base = os.environ.get("DEVPTR_CACHE_DIR") or os.path.join(tempfile.gettempdir(), "devptr-cache")
    return Path(base)


def is_complete(root: Path, name: str = "vllm") -> bool:
    """Whether ``root`` holds a complete package folder of ``TREES[name]``."""
    tree = TREES[name]
    pkg = root / tree.package
    if not (pkg / "__init__.py").is_file():
        return False
    record = next(root.glob(f"{tree.dist}-{tree.version}.dist-info/RECORD"), None)
    if record is None:
        return sum(1 for _ in pkg.rglob("*.py")) >= tree.min_py_files
    wanted = [
        line.split(",", 1)[0]
        for line in record.read_text().splitlines()
        if line.startswith(f"{tree.package}/") and line.split(",", 1)[0].endswith(".py")
    ]
    return bool(wanted) and all((root / w).is_file() for w in wanted)


def wheel(name: str, dest: Path | None = None) -> Path:
    """The wheel of ``TREES[name]`` in ``dest`` (default ``<cache>/wheels``), fetched with
    ``pip download --no-deps`` once and kept (``tools.vllm_suite`` installs it)."""
    tree = TREES[name]
    dest = cache_root() / "wheels" if dest is None else dest
    dest.mkdir(parents=True, exist_ok=True)
    wheels = sorted(dest.glob(f"{tree.dist}-{tree.version}-*.whl"))
    if not wheels:
        cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", tree.requirement,
               "-d", str(dest)]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SourceTreeError(f"`{' '.join(cmd)}` failed:\n{done.stderr[-2000:]}")
        wheels = sorted(dest.glob(f"{tree.dist}-{tree.version}-*.whl"))
    if not wheels:
        raise SourceTreeError(f"pip download produced no {tree.requirement} wheel in {dest}")
    return wheels[0]


def download(name: str, dest: Path) -> None:
    """Unzip the package sources and ``.dist-info`` of ``TREES[name]``'s wheel into ``dest``
    (a wheel already in ``dest`` is reused; one fetched here is deleted afterwards)."""
    tree = TREES[name]
    fetched = not any(dest.glob(f"{tree.dist}-{tree.version}-*.whl"))
    path = wheel(name, dest)
    with zipfile.ZipFile(path) as zf:
        members = [
            m for m in zf.namelist()
            if (m.startswith(f"{tree.package}/") and m.endswith(".py")) or ".dist-info/" in m
        ]
        zf.extractall(dest, members)
    if fetched:
        path.unlink()  # the sources are what is used (vLLM: 57 MB of 378 MB)


def given_vllm_root() -> Path | None:
    """The vLLM tree named by ``$DEVPTR_VLLM_TREE`` / ``$DEVPTR_VLLM_SRC`` (None: neither set)."""
    tree = os.environ.get("DEVPTR_VLLM_TREE")
    if tree:
        pkg = Path(tree)
        if not (pkg / "__init__.py").is_file():
            raise SourceTreeError(f"DEVPTR_VLLM_TREE={tree} is not a vllm/ package folder")
        return pkg.parent
    given = os.environ.get("DEVPTR_VLLM_SRC")
    if given:
        root = Path(given)
        if not is_complete(root):
            raise SourceTreeError(f"DEVPTR_VLLM_SRC={given} has no complete vllm/ tree")
        return root
    return None


def source_root(name: str) -> Path:
    """The folder containing the package folder of ``TREES[name]`` (see the module doc)."""
    if name not in TREES:
        raise SourceTreeError(f"unknown tree {name!r} (known: {', '.join(TREES)})")
    if name == "vllm":
        given = given_vllm_root()
        if given is not None:
            return given
    cached = cache_root() / TREES[name].folder_name
    if not is_complete(cached, name):
        download(name, cached)
    if not is_complete(cached, name):
        raise SourceTreeError(f"unzipped {TREES[name].requirement} in {cached} is incomplete")
    return cached


def vllm_source_root() -> Path:
    """The folder containing vLLM 0.33.0's ``vllm/`` package sources."""
    return source_root("vllm")


if __name__ == "__main__":
    which = sys.argv[1] if len(sys.argv) > 1 else "vllm"
    print(source_root(which) / TREES[which].package)
