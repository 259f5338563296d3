"""tools.wheel_sources finds third-party trees without the network when it can: the
environment's tree, then a complete cached copy; bad settings are named. (Its download is
exercised by CI, which fetches vLLM through it; no test here downloads.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from tools import wheel_sources as ws


def _fake_tree(root: Path, files: tuple[str, ...] = ("__init__.py", "a/b.py")) -> Path:
    for f in files:
        (root / "vllm" / f).parent.mkdir(parents=True, exist_ok=True)
        (root / "vllm" / f).write_text("")
    info = root / f"vllm-{ws.VLLM_VERSION}.dist-info"
    info.mkdir(parents=True)
    (info / "RECORD").write_text("".join(f"vllm/{f},sha256=x,0\n" for f in files))
    return root


def test_the_environments_tree_comes_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _fake_tree(tmp_path / "given")
    monkeypatch.setenv("DEVPTR_VLLM_TREE", str(root / "vllm"))
    monkeypatch.setenv("DEVPTR_CACHE_DIR", str(tmp_path / "empty-cache"))
    assert ws.vllm_source_root() == root
    monkeypatch.delenv("DEVPTR_VLLM_TREE")
    monkeypatch.setenv("DEVPTR_VLLM_SRC", str(root))
    assert ws.vllm_source_root() == root
    assert not (tmp_path / "empty-cache").exists()  # nothing fetched


def test_bad_settings_are_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEVPTR_VLLM_TREE", str(tmp_path))
    with pytest.raises(ws.SourceTreeError, match=r"DEVPTR_VLLM_TREE=.* is not a vllm/ package folder"):
        ws.vllm_source_root()
    monkeypatch.delenv("DEVPTR_VLLM_TREE")
    monkeypatch.setenv("DEVPTR_VLLM_SRC", str(tmp_path))
    with pytest.raises(ws.SourceTreeError, match=r"DEVPTR_VLLM_SRC=.* has no complete vllm/ tree"):
        ws.vllm_source_root()
    with pytest.raises(ws.SourceTreeError, match="unknown tree 'torch'"):
        ws.source_root("torch")


def test_a_complete_cached_copy_is_used_and_an_incomplete_one_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DEVPTR_VLLM_TREE", raising=False)
    monkeypatch.delenv("DEVPTR_VLLM_SRC", raising=False)
    monkeypatch.setenv("DEVPTR_CACHE_DIR", str(tmp_path))
    cached = _fake_tree(tmp_path / f"vllm-{ws.VLLM_VERSION}")
    assert ws.is_complete(cached)
    assert ws.source_root("vllm") == cached
    (cached / "vllm" / "a" / "b.py").unlink()  # listed in RECORD, missing on disk
    assert not ws.is_complete(cached)
