"""The trees under test: vLLM as shipped, and vLLM migrated by ``devptr migrate``.

The migration runs on a copy of the wheel's unmodified ``vllm/`` sources
(:func:`tools.wheel_sources.vllm_source_root`) with :data:`RECIPE`, the adopter recipe of
``docs/migrate.md``. The migrated tree is put in front of the installed package through a
folder on ``PYTHONPATH`` that mirrors the installed ``vllm/`` with links, except for the
files the migration changed (compiled extensions and data files stay the installed ones).
"""

from __future__ import annotations

import difflib
import hashlib
import shutil
import sys
from pathlib import Path
from typing import Final

from tools.vllm_suite._env import run
from tools.wheel_sources import vllm_source_root

RECIPE: Final[tuple[str, ...]] = ("--select", "ALL", "--unsafe-fixes")
"""``devptr migrate`` options for an adopter (docs/migrate.md, "Adopting devptr")."""


def _devptr_key(devptr_root: Path) -> str:
    digest = hashlib.sha256(" ".join(RECIPE).encode())
    for path in sorted((devptr_root / "devptr").rglob("*.py")):
        digest.update(path.relative_to(devptr_root).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def migrated_tree(cache: Path, devptr_root: Path) -> tuple[Path, str, str]:
    """``(folder holding the migrated vllm/, devptr migrate's summary, the unified diff)``.

    Built once per version of the checkout's ``devptr`` sources (their hash names it).
    """
    out = cache / f"migrated-{_devptr_key(devptr_root)}"
    summary, patch = out / "migrate-summary.txt", out / "migrate.diff"
    if not patch.is_file():
        shipped = vllm_source_root() / "vllm"
        if out.exists():
            shutil.rmtree(out)
        shutil.copytree(shipped, out / "vllm", ignore=shutil.ignore_patterns("__pycache__"))
        cmd = [sys.executable, "-m", "devptr.cli", "migrate", "vllm", *RECIPE]
        done = run(cmd, env={"PYTHONPATH": str(devptr_root), "COLUMNS": "100"}, cwd=out)
        summary.write_text(done)
        patch.write_text(_diff(shipped, out / "vllm"))
    return out, summary.read_text(), patch.read_text()


def _diff(shipped: Path, migrated: Path) -> str:
    chunks: list[str] = []
    for new in sorted(migrated.rglob("*.py")):
        rel = new.relative_to(migrated)
        old = shipped / rel
        a, b = old.read_text(), new.read_text()
        if a != b:
            name = f"vllm/{rel.as_posix()}"
            chunks.extend(difflib.unified_diff(
                a.splitlines(keepends=True), b.splitlines(keepends=True),
                f"a/{name}", f"b/{name}"))  # fmt: skip
    return "".join(chunks)


def overlay(cache: Path, python: Path, migrated: Path) -> Path:
    """A folder whose ``vllm/`` is the venv's installed vLLM with the migrated files in.

    Put it first on ``PYTHONPATH``: ``import vllm`` then loads the migrated modules.
    """
    site = next((python.parent.parent / "lib").glob("python3.*/site-packages"))
    installed = site / "vllm"
    dest = cache / f"overlay-{python.parent.parent.name}-{migrated.name}"
    if (dest / "vllm" / "__init__.py").exists():
        return dest
    tmp = dest.with_suffix(".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    for src in installed.rglob("*"):
        if "__pycache__" in src.parts or src.is_dir():
            continue
        rel = src.relative_to(installed)
        target = tmp / "vllm" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        new = migrated / "vllm" / rel
        if src.suffix == ".py" and new.is_file() and new.read_bytes() != src.read_bytes():
            shutil.copyfile(new, target)
        else:
            target.symlink_to(src)
    tmp.rename(dest)
    return dest
