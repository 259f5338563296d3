"""Downloads and venvs for the vLLM suite: the sdist's tests, one venv per torch version.

Everything lives under one cache folder and is built once: a venv whose marker file names
the same pins is reused as it is.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tarfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

from tools.wheel_sources import VLLM_VERSION, SourceTreeError
from tools.wheel_sources import wheel as fetch_wheel

TORCH_VERSIONS: Final[tuple[str, ...]] = ("2.13.0", "2.14.1")

PINNED: Final[tuple[str, ...]] = (
    # What vLLM 0.33.0's imports need to collect and run TEST_PATHS on a CPU-only machine
    # (found by collecting them until nothing was missing), with their dependencies, as
    # resolved on 2026-12-01 (triton is left to torch: 2.13.0 and 2.14.1 pin different ones).
    # vLLM itself goes in with --no-deps: its own pins (torch
    # 2.14.0, CUDA kernels packages) cannot install here.
    "aiohappyeyeballs==2.7.1", "aiohttp==3.14.5", "aiosignal==1.4.0", "annotated-doc==0.0.7",
    "annotated-types==0.8.0", "anthropic==2.15.0", "anyio==4.16.0",
    "apache-tvm-ffi==0.1.15.post2", "attrs==26.1.0", "blake3==1.0.11", "cachetools==8.0.2",
    "cbor2==6.3.0", "certifi==2026.10.19.post1", "charset-normalizer==3.5.3", "click==8.5.1",
    "cloudpickle==3.1.3", "docstring_parser==0.18.0", "einops==0.8.2", "fastapi==0.165.0",
    "filelock==4.3.1", "frozenlist==1.8.0", "fsspec==2026.9.0", "h11==0.16.0",
    "hf-xet==1.8.0", "httpcore==1.0.9", "httpcore2==2.16.2", "httpx==0.28.1",
    "httpx2==2.16.2", "huggingface_hub==2.4.0", "idna==3.20", "iniconfig==2.3.1",
    "Jinja2==3.1.6", "jiter==0.19.0", "llguidance==1.9.1", "markdown-it-py==4.3.0",
    "MarkupSafe==3.0.4", "mdurl==0.1.2", "mpmath==1.3.0", "msgspec==0.23.0",
    "multidict==7.2.1", "networkx==3.6.1", "numpy==2.4.6", "openai==3.57.0",
    "opentelemetry-api==1.45.2", "orjson==3.13.0", "oss-harmony==0.0.11", "packaging==26.4",
    "partial-json-parser==0.2.1.1.post7", "pillow==13.0.0", "pluggy==1.7.0",
    "prometheus_client==0.26.0", "propcache==0.5.4", "protobuf==7.36.2", "psutil==7.2.2",
    "py-cpuinfo==9.0.0", "pybase64==1.5.1", "pydantic==2.14.4", "pydantic_core==2.50.5",
    "Pygments==2.21.0", "pytest==9.2.0", "pytest-asyncio==1.5.0", "pytest-timeout==2.4.0",
    "python-json-logger==4.2.0", "PyYAML==6.0.4", "pyzmq==27.3.0", "regex==2026.11.19",
    "requests==2.34.2", "rich==15.0.0", "safetensors==0.8.0", "sentencepiece==0.2.3",
    "setproctitle==1.3.8", "shellingham==1.5.4", "sniffio==1.3.1", "starlette==1.10.0",
    "sympy==1.14.0", "tblib==3.2.2", "tokenizers==0.23.3", "tqdm==4.70.1",
    "transformers==5.20.2", "truststore==0.10.5", "typer==0.29.2",
    "typing-inspection==0.4.5", "typing_extensions==4.16.0", "urllib3==2.8.0",
    "uvicorn==0.54.0", "uvloop==0.23.0", "watchfiles==1.3.0", "xgrammar==0.2.9",
    "yarl==1.25.1",
)
"""Pins of every package the test venvs get besides torch and vLLM."""

SDIST_BUILD: Final[tuple[str, ...]] = ("setuptools>=77.0.3,<81", "setuptools-scm>=8", "wheel")
"""What vLLM's setup.py needs to state its metadata (pip download runs it once)."""

SDIST_PARTS: Final[tuple[str, ...]] = ("tests", "examples", "pyproject.toml")
"""What the suite takes from the sdist: the tests, the examples some tests import, and the
pytest configuration (markers)."""


class SuiteError(RuntimeError):
    """A download, venv build or migration of the vLLM suite failed (the message says which)."""


def run(cmd: Sequence[str | Path], env: Mapping[str, str] | None = None, cwd: Path | None = None) -> str:
    """Run ``cmd``; its output (stdout, then stderr); :class:`SuiteError` (its tail) on failure."""
    done = subprocess.run(
        [str(c) for c in cmd], capture_output=True, text=True, check=False, cwd=cwd,
        env=None if env is None else {**os.environ, **env},
    )
    if done.returncode != 0:
        raise SuiteError(f"`{' '.join(map(str, cmd))}` exited {done.returncode}:\n"
                         f"{(done.stdout + done.stderr)[-3000:]}")
    return done.stdout + done.stderr


def venv(cache: Path, torch_version: str, devptr_root: Path) -> Path:
    """The venv for ``torch_version`` (built once): torch, :data:`PINNED`, vLLM (--no-deps).

    The checkout's ``devptr`` package is put on the venv's path by a ``.pth`` file naming a
    folder that holds only a link to it (the checkout itself holds ``tests/``, which would
    shadow vLLM's ``tests`` package).
    """
    root = cache / f"venv-torch{torch_version}"
    python = root / "bin" / "python"
    wheel = fetch_wheel("vllm")
    key = hashlib.sha256("\n".join([torch_version, wheel.name, *PINNED]).encode()).hexdigest()
    marker = root / "devptr-suite.key"
    if not (marker.is_file() and marker.read_text() == key):
        run([sys.executable, "-m", "venv", "--clear", root])
        pip: list[str | Path] = [python, "-m", "pip", "install", "-q"]
        run([*pip, f"torch=={torch_version}", *PINNED])
        run([*pip, "--no-deps", wheel])
        marker.write_text(key)
    link_dir = cache / "devptr-path"
    link_dir.mkdir(parents=True, exist_ok=True)
    link = link_dir / "devptr"
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(devptr_root / "devptr", target_is_directory=True)
    site = next((root / "lib").glob("python3.*/site-packages"))
    (site / "devptr-suite.pth").write_text(f"{link_dir}\n")
    return python


def sdist_tree(cache: Path, python: Path) -> Path:
    """The folder holding :data:`SDIST_PARTS` of vLLM 0.33.0's sdist (downloaded once).

    ``pip download`` of an sdist runs its setup.py for the metadata: ``python`` (a venv with
    torch) gets :data:`SDIST_BUILD`, and ``VLLM_TARGET_DEVICE=empty`` with
    ``VLLM_VERSION_OVERRIDE`` keep that from building anything or renaming the version.
    """
    tree = cache / f"vllm-{VLLM_VERSION}-sdist"
    if all((tree / part).exists() for part in SDIST_PARTS):
        return tree
    dest = cache / "downloads"
    archives = sorted(dest.glob(f"vllm-{VLLM_VERSION}.tar.gz"))
    if not archives:
        run([python, "-m", "pip", "install", "-q", *SDIST_BUILD])
        run([python, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", "vllm",
             "--no-build-isolation", f"vllm=={VLLM_VERSION}", "-d", dest],
            env={"VLLM_TARGET_DEVICE": "empty", "VLLM_VERSION_OVERRIDE": VLLM_VERSION})
        archives = sorted(dest.glob(f"vllm-{VLLM_VERSION}.tar.gz"))
    if not archives:
        raise SourceTreeError(f"pip download produced no vllm {VLLM_VERSION} sdist in {dest}")
    prefix = f"vllm-{VLLM_VERSION}/"
    with tarfile.open(archives[0]) as tf:
        members = []
        for m in tf.getmembers():
            rel = m.name.removeprefix(prefix)
            if m.name.startswith(prefix) and rel.split("/", 1)[0] in SDIST_PARTS:
                m.name = rel
                members.append(m)
        tf.extractall(tree, members, filter="data")
    return tree
