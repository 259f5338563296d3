"""The GPU half: a folder to carry to a CUDA machine that has no vLLM and no network.

:func:`bundle` writes the two vLLM Mamba kernel test files (unchanged), the two vLLM
modules they import (shipped and migrated), the checkout's ``devptr`` package, the
stand-ins (``tests/support/vllm_stand_ins.py`` and its loader, under ``support/`` there;
:mod:`tools.vllm_suite.pytest_vllm_stand_ins`) and
``run_gpu.sh``, which runs the tests once per tree and writes ``$OUT/<tree>.xml``. Only
pytest, torch and triton are needed there.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Final

from tools.wheel_sources import vllm_source_root

GPU_TESTS: Final[tuple[str, ...]] = (
    "tests/kernels/mamba/test_memcpy_u64_tiled.py",
    "tests/kernels/mamba/test_precopy_mamba_align.py",
)
"""The test files of :data:`tools.vllm_suite.TEST_PATHS` that import no more of vLLM than
the Mamba modules (the others need vLLM's config, scheduler or custom ops)."""

MODULES: Final[tuple[str, ...]] = (
    "vllm/v1/worker/mamba_utils.py",
    "vllm/model_executor/layers/mamba/mamba_utils.py",
)

_RUN: Final = """set -u
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
for t in shipped migrated; do
  echo "=== $t"
  DEVPTR_VLLM_TREE=$PWD/$t/vllm PYTHONPATH=$PWD:$PWD/tools/vllm_suite:$PWD/_support timeout 250 \\
    python3 -m pytest -c pytest.ini --rootdir=. -q -p no:cacheprovider \\
    -p pytest_vllm_stand_ins --junitxml=$OUT/$t.xml -rfE tests 2>&1 | tail -25
done
"""


def bundle(dest: Path, tests: Path, migrated: Path, repo: Path) -> None:
    """Write the GPU folder to ``dest`` (replaced): see the module doc."""
    if dest.exists():
        shutil.rmtree(dest)
    skip = shutil.ignore_patterns("__pycache__")
    shutil.copytree(repo / "devptr", dest / "devptr", ignore=skip)
    (dest / "tools" / "vllm_suite").mkdir(parents=True)
    for name in ("__init__.py", "wheel_sources.py"):
        shutil.copy(repo / "tools" / name, dest / "tools" / name)
    (dest / "_support" / "support").mkdir(parents=True)
    for name in ("__init__.py", "vllm_load.py", "vllm_stand_ins.py"):
        shutil.copy(repo / "tests" / "support" / name, dest / "_support" / "support" / name)
    for name in ("__init__.py", "pytest_vllm_stand_ins.py"):
        shutil.copy(repo / "tools" / "vllm_suite" / name, dest / "tools" / "vllm_suite" / name)
    for rel in GPU_TESTS:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(tests / rel, target)
    for pkg in ("tests", "tests/kernels", "tests/kernels/mamba"):
        (dest / pkg / "__init__.py").touch()
    for tree, root in (("shipped", vllm_source_root()), ("migrated", migrated)):
        (dest / tree / "vllm").mkdir(parents=True)
        (dest / tree / "vllm" / "__init__.py").touch()
        for rel in MODULES:
            target = dest / tree / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(root / rel, target)
    (dest / "pytest.ini").write_text("[pytest]\n")
    (dest / "run_gpu.sh").write_text(_RUN)
