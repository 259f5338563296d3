"""vLLM 0.33.0's own tests as a harness of ours: shipped vs migrated by ``devptr migrate``.

``python -m tools.vllm_suite`` (see ``--help``) downloads vLLM 0.33.0's wheel (the code
under test) and its sdist (for ``tests/``) into a cache folder, builds one venv per torch
version (the wheel installed with ``--no-deps`` plus :data:`tools.vllm_suite._env.PINNED`),
migrates a copy of the wheel's sources with ``devptr migrate`` (the adopter recipe of
``docs/migrate.md``), and runs :data:`TEST_PATHS` unchanged with ``VLLM_TARGET_DEVICE=cpu``
for every combination of torch version, tree (``shipped``, ``migrated``) and address mode
(``low``: as the machine gives them; ``high``: every test inside
:func:`devptr.testing.high_addresses`, through the pytest plugin
:mod:`tools.vllm_suite.pytest_high_addresses`). The table of passed / failed / skipped per
file and variant goes to ``benchmarks/results/vllm_suite.md``. Nothing of vLLM is
committed; the cache folder defaults to ``<tempdir>/devptr-cache/vllm-suite``.
"""

from __future__ import annotations

from typing import Final

TEST_PATHS: Final[tuple[str, ...]] = (
    "tests/v1/worker/test_mamba_utils.py",
    "tests/v1/ec_connector/unit/",
    "tests/kernels/mamba/test_precopy_mamba_align.py",
    "tests/kernels/mamba/test_memcpy_u64_tiled.py",
    "tests/kernels/core/test_minimax_reduce_rms.py",
)
"""The vLLM test files (paths as in the sdist) that reach the four ported modules."""
