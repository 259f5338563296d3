"""Patterns of the development trees of the second corpus split (2026-12-02,
``benchmarks/results/lint.md``) that need more than one module: addresses behind a
property of a class of another module (DeepSpeed ``ragged_wrapper.py``)."""

from __future__ import annotations

from pathlib import Path

from devptr.lint import analyze_source
from devptr.lint.engine import analyze_paths

DESCRIPTORS = '''
import torch

class BaseSequenceDescriptor:
    @property
    def kv_blocks_ptr(self) -> int:
        """The pointer to the KV blocks of this sequence."""
        raise NotImplementedError()

class PlaceholderSequenceDescriptor(BaseSequenceDescriptor):
    def __init__(self, kv_blocks_ptr=0):
        self._kv_blocks_ptr = kv_blocks_ptr

    @property
    def kv_blocks_ptr(self) -> int:
        return self._kv_blocks_ptr

class DSSequenceDescriptor(BaseSequenceDescriptor):
    def __init__(self, ids):
        self._kv_cache_ids = ids

    @property
    def kv_blocks_ptr(self) -> int:
        return self._kv_cache_ids[0].data_ptr()

    @property
    def seen_tokens(self) -> int:
        return self._seen
'''

BATCH = '''
import torch
from .sequence_descriptor import DSSequenceDescriptor

class RaggedBatch:
    def clear(self):
        self._kv_blocks_ptr_buf = []
        self._seen_buf = []

    def insert_sequence(self, seq_descriptor: DSSequenceDescriptor):
        self._kv_blocks_ptr_buf.append(seq_descriptor.kv_blocks_ptr)
        self._seen_buf.append(seq_descriptor.seen_tokens)

    def finalize(self):
        self._kv_ptrs_shadow[:len(self._kv_blocks_ptr_buf)].copy_(
            torch.tensor(self._kv_blocks_ptr_buf))
        self._seen_shadow.copy_(torch.tensor(self._seen_buf))
'''


def _tree(tmp_path: Path, descriptors: str) -> list[tuple[str, int, str]]:
    pkg = tmp_path / "ragged"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "sequence_descriptor.py").write_text(descriptors)
    (pkg / "ragged_wrapper.py").write_text(BATCH)
    return sorted((Path(f.path).name, f.line, f.code)
                  for r in analyze_paths([tmp_path]) for f in r.findings)


def test_a_property_of_another_module_returning_data_ptr(tmp_path: Path) -> None:
    """The list attribute filled from the property in one method is built into an int64
    table in another; the abstract base (``raise``) and a placeholder returning a value
    named like an address do not hide the one that returns ``data_ptr()``."""
    assert _tree(tmp_path, DESCRIPTORS) == [("ragged_wrapper.py", 16, "DP002")]


def test_a_property_of_another_module_returning_no_address(tmp_path: Path) -> None:
    plain = DESCRIPTORS.replace("self._kv_cache_ids[0].data_ptr()", "self._kv_cache_ids[0]")
    assert _tree(tmp_path, plain) == []


def test_the_same_properties_in_one_module() -> None:
    one = DESCRIPTORS + BATCH.replace("from .sequence_descriptor import DSSequenceDescriptor",
                                      "")
    line = next(i for i, text in enumerate(one.splitlines(), start=1)
                if "torch.tensor(self._kv_blocks_ptr_buf)" in text)
    assert [(f.line, f.code) for f in analyze_source(one)] == [(line, "DP002")]
