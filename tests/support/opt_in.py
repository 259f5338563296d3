"""Tests that do not run by default, and how to turn them on (one place for the rules).

The README's test command runs offline, in minutes, and leaves nothing behind. Tests that
need more are marked, and :func:`apply_skips` (called by the root ``conftest.py``) skips
them with a reason that says how to run them:

- ``vllm``: executes vLLM 0.33.0's own files (the differential tests). Runs when
  ``DEVPTR_VLLM_TREE`` (the unzipped wheel's ``vllm/`` folder) or ``DEVPTR_VLLM_SRC`` (the
  folder containing it) is set, or with ``DEVPTR_NETWORK_TESTS=1``, which lets
  :mod:`tools.wheel_sources` download the wheel (about 378 MB, with ``pip download``) into
  ``$DEVPTR_CACHE_DIR`` (default ``<tempdir>/devptr-cache``), kept there for the next run.
- ``slow``: builds fresh virtual environments with pip (the package index is needed; one
  of them installs torch). Runs with ``DEVPTR_SLOW_TESTS=1``.
"""

from __future__ import annotations

import os
from collections.abc import Container, Mapping

import pytest

NETWORK_ENV = "DEVPTR_NETWORK_TESTS"
SLOW_ENV = "DEVPTR_SLOW_TESTS"

MARKERS: dict[str, str] = {
    "vllm": f"runs vLLM 0.33.0's own files (set DEVPTR_VLLM_TREE, or {NETWORK_ENV}=1 to download)",
    "slow": f"builds fresh venvs with pip, needs the package index (set {SLOW_ENV}=1)",
}
"""Marker name -> description (pyproject.toml declares the same markers for --strict-markers)."""

VLLM_REASON = (
    "needs vLLM 0.33.0's sources: set DEVPTR_VLLM_TREE=<the unzipped wheel's vllm/ folder>, "
    f"or {NETWORK_ENV}=1 to download the wheel (378 MB) into $DEVPTR_CACHE_DIR "
    "(default <tempdir>/devptr-cache)"
)
SLOW_REASON = (
    f"slow: builds a fresh venv with pip from the package index (minutes, GBs); set {SLOW_ENV}=1"
)


def _on(env: Mapping[str, str], name: str) -> bool:
    return env.get(name, "").strip().lower() in {"1", "true", "yes", "on"}


def skip_reason(keywords: Container[str], env: Mapping[str, str] = os.environ) -> str | None:
    """Why an item with these keywords/markers must skip under ``env`` (None: it runs)."""
    if "vllm" in keywords and not (
        env.get("DEVPTR_VLLM_TREE") or env.get("DEVPTR_VLLM_SRC") or _on(env, NETWORK_ENV)
    ):
        return VLLM_REASON
    if "slow" in keywords and not _on(env, SLOW_ENV):
        return SLOW_REASON
    return None


def apply_skips(items: list[pytest.Item], env: Mapping[str, str] = os.environ) -> None:
    """Add a skip mark to every collected item whose opt-in is not given."""
    for item in items:
        reason = skip_reason(item.keywords, env)
        if reason is not None:
            item.add_marker(pytest.mark.skip(reason=reason))
