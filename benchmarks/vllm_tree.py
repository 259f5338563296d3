"""Locate (or fetch) an unzipped vLLM 0.33.0 source tree for benchmarks.

vLLM is never committed to this repository. :func:`vllm_source_tree` returns a folder
that contains the ``vllm/`` package sources of the 0.33.0 wheel, found in this order:

1. ``$DEVPTR_VLLM_SRC`` (a folder containing ``vllm/``), when set;
2. a cache folder, ``$DEVPTR_CACHE_DIR/vllm-0.33.0`` (default: ``<tempdir>/devptr-cache``);
3. otherwise the wheel is downloaded into the cache with ``pip download --no-deps
   vllm==0.33.0`` and its Python files are unzipped there (about 3,200 files).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

VLLM_VERSION = "0.33.0"
_MIN_PY_FILES = 3000  # the 0.33.0 wheel holds 3,231 .py files under vllm/


def _cache_root() -> Path:
    base = os.environ.get("DEVPTR_CACHE_DIR") or os.path.join(tempfile.gettempdir(), "devptr-cache")
    return Path(base)


def is_complete(root: Path) -> bool:
    """Whether *root* holds a complete ``vllm/`` source tree of the expected version."""
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


def _download(dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    wheels = sorted(dest.glob(f"vllm-{VLLM_VERSION}-*.whl"))
    if not wheels:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", f"vllm=={VLLM_VERSION}",
             "-d", str(dest)],
            check=True,
        )
        wheels = sorted(dest.glob(f"vllm-{VLLM_VERSION}-*.whl"))
    if not wheels:
        raise FileNotFoundError(f"pip download produced no vllm {VLLM_VERSION} wheel in {dest}")
    with zipfile.ZipFile(wheels[0]) as zf:
        members = [
            m for m in zf.namelist()
            if (m.startswith("vllm/") and m.endswith(".py")) or ".dist-info/" in m
        ]
        zf.extractall(dest, members)
    return dest


def vllm_source_tree() -> Path:
    """Folder containing an unzipped vLLM 0.33.0 ``vllm/`` source tree.

    Returns
    -------
    pathlib.Path
        The folder that contains ``vllm/`` (and ``vllm-0.33.0.dist-info/``).

    Raises
    ------
    FileNotFoundError
        If ``$DEVPTR_VLLM_SRC`` is set but incomplete, or the download gave no wheel.
    subprocess.CalledProcessError
        If ``pip download`` fails (no network access to PyPI).
    """
    given = os.environ.get("DEVPTR_VLLM_SRC")
    if given:
        root = Path(given)
        if not is_complete(root):
            raise FileNotFoundError(f"DEVPTR_VLLM_SRC={given} has no complete vllm/ tree")
        return root
    cached = _cache_root() / f"vllm-{VLLM_VERSION}"
    if is_complete(cached):
        return cached
    _download(cached)
    if not is_complete(cached):
        raise FileNotFoundError(f"unzipped vllm {VLLM_VERSION} in {cached} is incomplete")
    return cached


if __name__ == "__main__":
    print(vllm_source_tree())
