"""Every address source and table sink of :mod:`devptr.lint.catalogue` reaches a finding
through the ``devptr check`` command (its file filter, its workers, its report), not only
through :func:`~devptr.lint.engine.analyze_source`.

One small module per catalogue entry is written: a source feeding an int64
``torch.tensor`` table, or ``t.data_ptr()`` feeding a sink. The modules hold nothing else
address-like (names are ``n``, ``h``, ``x``, ``y``), so a source missing from the engine's
text filter is a missed module.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from devptr.cli import app
from devptr.lint import catalogue as cat

runner = CliRunner()


def _module_of(qualified: str) -> tuple[str, str]:
    """``cupy.cuda.runtime.malloc`` -> (``import cupy.cuda.runtime``, the call's name)."""
    module, _, _ = qualified.rpartition(".")
    return f"import {module}", qualified


def _source_snippets() -> dict[str, tuple[str, str]]:
    """Catalogue entry -> (module text, rule expected). Each source value ``y`` ends in an
    int64 table (DP002), a host source in DP008."""
    table = "    return torch.tensor([y], dtype=torch.int64)\n"
    out: dict[str, tuple[str, str]] = {}
    for method in cat.ADDRESS_METHODS:
        out[f"method {method}"] = (f"def f(x):\n    y = x.{method}()\n{table}", "DP002")
    for attr in cat.PEER_POINTER_ATTRS:
        out[f"attribute {attr}"] = (f"def f(h):\n    y = h.{attr}[0]\n{table}", "DP002")
    for name in cat.ADDRESS_FUNCTIONS:
        imp, call = _module_of(name)
        out[name] = (f"{imp}\n\n\ndef f(n):\n    y = {call}(n)\n{table}", "DP002")
    for name in cat.ADDRESS_PAIR_FUNCTIONS:
        imp, call = _module_of(name)
        out[name] = (f"{imp}\n\n\ndef f(n):\n    err, y = {call}(n)\n{table}", "DP002")
    for suffix in cat.ADDRESS_FUNCTION_SUFFIXES:
        out[f"wrapper {suffix}"] = (
            f"def f(lib, n):\n    y = lib.{suffix}(n)\n"
            "    return torch.tensor(y, dtype=torch.int64)\n", "DP002")
    out["__cuda_array_interface__"] = (
        f"def f(x):\n    y = x.{cat.CUDA_ARRAY_INTERFACE}['data'][0]\n{table}", "DP002")
    out["cupy .data.ptr"] = (f"def f(x):\n    y = x.data.{cat.CUPY_POINTER_ATTR}\n{table}",
                             "DP002")
    for name in cat.HOST_ADDRESS_FUNCTIONS:
        imp, call = _module_of(name)
        out[name] = (f"{imp}\n\n\ndef f(n):\n    y = {call}(n)\n{table}", "DP008")
    return {k: ("import torch\n" + v[0], v[1]) for k, v in out.items()}


def _sink_snippets() -> dict[str, tuple[str, str]]:
    """Catalogue sink -> (module text, rule expected), each fed ``x.data_ptr()``."""
    src = "    y = x.data_ptr()\n"
    out: dict[str, tuple[str, str]] = {}
    for name in cat.TABLE_CONSTRUCTORS:
        dtype = "torch.int64" if name.startswith("torch.") else "numpy.int64"
        call = (f"{name}([y])" if name == "torch.LongTensor"
                else f"{name}([y], dtype={dtype})")
        out[name] = (f"def f(x):\n{src}    return {call}\n", "DP002")
    for name in cat.FILL_CONSTRUCTORS:
        dtype = "torch.int64" if name.startswith("torch.") else "numpy.int64"
        out[name] = (f"def f(x):\n{src}    return {name}((2,), y, dtype={dtype})\n", "DP002")
    for name in cat.STACKING_CONSTRUCTORS:
        if name.startswith("numpy."):
            out[name] = (f"def f(x):\n{src}    return {name}([[y], [4096]])\n", "DP002")
    out[cat.PY_ARRAY] = (f"def f(x):\n{src}    return array.array('q', [y])\n", "DP002")
    for name in cat.OUT_UFUNCS - {"numpy.copyto"}:
        out[name] = (
            f"def f(x, b):\n{src}    t = numpy.zeros(4, dtype=numpy.int64)\n"
            f"    {name}(b, y, out=t)\n    return t\n", "DP001")
    out["numpy.copyto"] = (
        f"def f(x):\n{src}    t = numpy.zeros(4, dtype=numpy.int64)\n"
        "    numpy.copyto(t, y)\n    return t\n", "DP001")
    for method in cat.STORE_METHODS:
        call = {"__setitem__": "t[0] = y", "index_fill_": "t.index_fill_(0, i, y)",
                "copy_": "t.copy_(torch.tensor([y]))"}.get(method, f"t.{method}(y)")
        out[f"method {method}"] = (
            f"def f(x, i):\n{src}    t = torch.zeros(4, dtype=torch.int64)\n    {call}\n"
            "    return t\n", "DP001" if method != "copy_" else "DP002")
    return {k: ("import array\n\nimport numpy\nimport torch\n" + v[0], v[1])
            for k, v in out.items()}


def _check_all(tmp_path: Path, snippets: dict[str, tuple[str, str]]) -> dict[str, set[str]]:
    names = {}
    for i, (entry, (text, _)) in enumerate(sorted(snippets.items())):
        path = tmp_path / f"m{i}.py"
        path.write_text(text)
        names[path.name] = entry
    result = runner.invoke(app, ["check", str(tmp_path), "--select", "ALL", "--format", "json",
                                 "--jobs", "2", "--no-progress"])
    assert result.exit_code in (0, 1), result.output
    found: dict[str, set[str]] = {entry: set() for entry in snippets}
    for f in json.loads(result.stdout)["findings"]:
        found[names[Path(f["path"]).name]].add(f["code"])
    return found


@pytest.mark.parametrize("kind", ["sources", "sinks"])
def test_every_catalogued_entry_reaches_a_finding_through_devptr_check(
    tmp_path: Path, kind: str
) -> None:
    snippets = _source_snippets() if kind == "sources" else _sink_snippets()
    found = _check_all(tmp_path, snippets)
    missed = {entry: (snippets[entry][1], sorted(codes)) for entry, codes in found.items()
              if snippets[entry][1] not in codes}
    assert not missed, missed


def test_the_issue_examples_reach_check(tmp_path: Path) -> None:
    """The spellings the file filter used to drop (issue 23)."""
    names = {"cupy.cuda.runtime.malloc", "cupy.cuda.runtime.mallocAsync",
             "cupy.cuda.runtime.ipcOpenMemHandle", "cupy.cuda.runtime.memGetAddressRange",
             "cuda.bindings.driver.cuMemAddressReserve"}
    snippets = {k: v for k, v in _source_snippets().items() if k in names}
    assert set(snippets) == names
    found = _check_all(tmp_path, snippets)
    assert all("DP002" in codes for codes in found.values()), found
