"""The engine's behaviour: sources, data flow, summaries (also across modules), encoded
values, spans and fixes. Each case is a small module analyzed for real."""

from __future__ import annotations

from pathlib import Path

import pytest

from devptr.lint import catalogue as cat
from devptr.lint.engine import FixKind, analyze_paths, analyze_source

HEAD = "import numpy as np\nimport torch\n"


def codes(src: str, *, head: str = HEAD) -> list[tuple[int, str]]:
    return [(f.line - head.count("\n"), f.code) for f in analyze_source(head + src)]


@pytest.mark.parametrize("src", [
    "import torch as T\nT.tensor([x.data_ptr()], dtype=T.int64)\n",
    "from torch import tensor, int64\ntensor([x.data_ptr()], dtype=int64)\n",
    "from numpy import array\narray([x.data_ptr(), 1])\n",
    "import numpy as N\nN.asarray([x.data_ptr()], dtype=N.int64)\n",
], ids=["import-as", "from-import", "numpy-from", "numpy-as"])
def test_import_aware_names(src: str) -> None:
    assert [c for _, c in codes(src, head="")] == ["DP002"]


@pytest.mark.parametrize("source", [
    "x.data_ptr()",
    "x.untyped_storage().data_ptr()",
    "handle.buffer_ptrs[0]",
    "cupy_arr.data.ptr",
    "x.__cuda_array_interface__['data'][0]",
    "ctypes.c_void_p(x.data_ptr()).value",
    "cuda.cudart.cudaMalloc(64)[1]",
])
def test_address_sources(source: str) -> None:
    src = f"import ctypes\nimport cuda.cudart\np = {source}\ntorch.tensor([p], dtype=torch.int64)\n"
    assert codes(src) == [(4, "DP002")]


def test_host_addresses_are_their_own_category() -> None:
    src = (
        "import ctypes\nb = ctypes.create_string_buffer(8)\n"
        "torch.tensor([ctypes.addressof(b)], dtype=torch.int64)\n"
    )
    found = analyze_source(HEAD + src)
    assert [(f.code, f.category) for f in found] == [("DP008", "host")]


@pytest.mark.parametrize("flow", [
    "ptrs = [a.data_ptr()] + [b.data_ptr()]\n",
    "ptrs = []\nfor t in ts:\n    ptrs.append(t.data_ptr())\n",
    "ptrs = []\nptrs.extend(t.data_ptr() for t in ts)\n",
    "ptrs = [t.data_ptr() for t in ts]\n",
    "ptrs = [(t.data_ptr(), t.numel()) for t in ts]\n",
    "get = lambda t: t.data_ptr()\nptrs = [get(t) for t in ts]\n",
    "def get(t):\n    return t.data_ptr()\nptrs = list(map(get, ts))\n",
    "p, n = a.data_ptr(), 4\nptrs = (p, n)\n",
], ids=["concat", "append-loop", "extend", "comprehension", "tuples", "lambda", "helper", "unpack"])
def test_data_flow_into_a_table(flow: str) -> None:
    got = codes(flow + "torch.tensor(ptrs, dtype=torch.int64)\n")
    assert [c for _, c in got] == ["DP002"]


@pytest.mark.parametrize("sink, code", [
    ("array.array('q', ptrs)", "DP002"),
    ("array.array('Q', ptrs)", "DP006"),
    ("(ctypes.c_uint64 * 2)(*ptrs)", "DP006"),
    ("np.column_stack([ptrs, ptrs])", "DP002"),
    ("np.fromiter(ptrs, dtype=np.int64)", "DP002"),
    ("np.full(2, ptrs[0], dtype=np.int64)", "DP002"),
    ("np.add(np.arange(2), ptrs[0], out=np.zeros(2, dtype=np.int64))", "DP001"),
    ("torch.zeros(2, dtype=torch.int64).fill_(ptrs[0])", "DP001"),
], ids=["array-q", "array-Q", "ctypes", "column_stack", "fromiter", "full", "add-out", "fill_"])
def test_sinks(sink: str, code: str) -> None:
    src = f"import array\nimport ctypes\nptrs = [a.data_ptr(), b.data_ptr()]\n{sink}\n"
    assert [c for _, c in codes(src)] == [code]


def test_dict_stores_hashes_and_encoded_values_are_not_findings() -> None:
    src = (
        "def to_signed(v):\n    return v - 2**64 if v >= 2**63 else v\n"
        "d: dict[int, int] = {}\nd[0] = x.data_ptr()\n"
        "h = torch.tensor([to_signed(hash('k'))], dtype=torch.int64)\n"
        "t = torch.zeros(2, dtype=torch.int64)\nt[0] = to_signed(x.data_ptr())\n"
        "t[1] = DevicePtr.of(x).signed\n"
    )
    assert codes(src) == [(7, "DP004")]  # the helper applied to an address: convention only


def test_two_complement_into_uint64_is_a_defect() -> None:
    src = "t = torch.zeros(2, dtype=torch.uint64)\nt[0] = DevicePtr.of(x).signed\n"
    found = analyze_source(HEAD + src)
    assert [f.code for f in found] == ["DP001"]
    assert "2.14" in found[0].message


def test_helper_summaries_across_modules(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "tables.py").write_text(
        "import torch\n\ndef make_ptr_table(rows):\n    return torch.tensor(rows, dtype=torch.int64)\n"
    )
    callers = "".join(
        f"def use{i}(t):\n    return make_ptr_table([t.data_ptr()])\n" for i in range(5)
    )
    (pkg / "users.py").write_text("from pkg.tables import make_ptr_table\n" + callers)
    (pkg / "rel.py").write_text(
        "from .tables import make_ptr_table\n\ndef f(t, n):\n"
        "    make_ptr_table([n])\n    return make_ptr_table([t.data_ptr() + 64])\n"
    )
    results = analyze_paths([tmp_path])
    found = [f for r in results for f in r.findings]
    # one defect, one finding: at the helper's table, naming the six calls (issue 23)
    assert [(Path(f.path).name, f.line, f.code) for f in found] == [("tables.py", 4, "DP002")]
    callers = [(Path(w.rpartition(":")[0]).name, int(w.rpartition(":")[2]))
               for w in found[0].callers]
    assert sorted(callers) == [("rel.py", 5)] + [("users.py", 3 + 2 * i) for i in range(5)]
    assert "make_ptr_table()" in found[0].message and "users.py:3" in found[0].message
    assert "rel.py:4" not in found[0].message  # make_ptr_table([n]): no address
    by_file = {Path(r.path).name: r.findings for r in results}
    assert by_file["users.py"] == () and by_file["rel.py"] == ()


def test_a_helper_table_is_one_finding_in_its_own_module() -> None:
    src = (
        "import torch\n\ndef make(rows):\n    return torch.tensor(rows, dtype=torch.int64)\n\n"
        "def a(t):\n    return make([t.data_ptr()])\n\ndef b(t):\n    return make([t.data_ptr()])\n"
    )
    found = analyze_source(src)
    assert [(f.line, f.code, f.callers) for f in found] == [
        (4, "DP002", ("<string>:7", "<string>:10"))]
    assert found[0].message.endswith("addresses passed in at lines 7, 10")


def test_source_helpers_of_other_modules_reach_files_without_sources(tmp_path: Path) -> None:
    """A module with no address source of its own is analyzed again when it imports a
    helper of the tree that returns addresses: by ``from mod import f``, through the
    module (``from pkg import mod``, ``import pkg.mod``) and from a package ``__init__``."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "def init_gather(ts):\n    return [t.data_ptr() for t in ts]\n"
    )
    (pkg / "caches.py").write_text(
        "def gather(ts):\n    return [t.data_ptr() for t in ts]\n"
    )
    table = "torch.tensor({}, dtype=torch.int64)\n"
    (pkg / "a.py").write_text("import torch\nfrom pkg.caches import gather\n"
                              + table.format("gather(xs)"))
    (pkg / "b.py").write_text("import torch\nfrom pkg import caches\n"
                              + table.format("caches.gather(xs)"))
    (pkg / "c.py").write_text("import torch\nimport pkg.caches\n"
                              + table.format("pkg.caches.gather(xs)"))
    (pkg / "d.py").write_text("import torch\nfrom pkg import init_gather\n"
                              + table.format("init_gather(xs)"))
    (pkg / "e.py").write_text("import torch\nfrom other import gather\n"
                              + table.format("gather(xs)"))  # not the tree's helper
    results = analyze_paths([tmp_path])
    found = sorted((Path(f.path).name, f.line, f.code) for r in results for f in r.findings)
    assert found == [(name, 3, "DP002") for name in ("a.py", "b.py", "c.py", "d.py")]


def test_an_address_by_name_stays_one_through_a_helper() -> None:
    """A helper returning a value only named like an address (``CONFIG.base_ptr``) gives
    its callers an address by name: not stored into unknown containers as a finding, where
    the same helper returning ``data_ptr()`` is one."""
    named = "def base():\n    return CONFIG.base_ptr\nptr_table[:] = [base()]\n"
    real = "def base():\n    return CONFIG.data_ptr()\nptr_table[:] = [base()]\n"
    assert codes(named) == []
    assert codes(real) == [(3, "DP001")]


def test_spans_are_character_columns_of_the_expression() -> None:
    src = "import torch\ntable = torch.zeros(2, dtype=torch.int64)\nname = 'é'; table[0] = x.data_ptr()\n"
    (found,) = analyze_source(src)
    line = src.splitlines()[2]
    assert (found.line, found.end_line) == (3, 3)
    assert line[found.col : found.end_col] == "table[0]"
    assert found.fix is not None and found.fix.kind is FixKind.STORE and found.fix.safety == "safe"
    value = found.fix.span("value")
    assert value is not None and line[value.col : value.end_col] == "x.data_ptr()"


def test_fix_safety() -> None:
    src = (
        "t = torch.zeros(4, dtype=torch.int64)\n"
        "t[0:1] = [x.data_ptr()]\n"
        "torch.tensor([a.data_ptr(), b.data_ptr()], dtype=torch.int64)\n"
        "torch.tensor([s.data_ptr() for s in ts], dtype=torch.int64)\n"
        "d = torch.uint64 if p.is_xpu() else torch.int64\n"
        "e = torch.uint64 if is_xpu() else torch.int64\n"
    )
    fixes = [(f.code, f.fix.kind, f.fix.safety) for f in analyze_source(HEAD + src)
             if f.fix is not None]
    assert fixes == [
        ("DP001", FixKind.STORE, "unsafe"),  # a slice store broadcasts
        ("DP002", FixKind.TABLE, "safe"),
        ("DP002", FixKind.TABLE, "safe"),  # rewritten with list(ts): the same iteration
        ("DP005", FixKind.DTYPE_BRANCH, "unsafe"),  # unknown platforms
    ]  # `is_xpu()` names no platform object to pass to encoding_for(): no fix


def test_catalogue_is_fully_qualified() -> None:
    for table in (cat.TABLE_SINKS, cat.ALLOCATORS, cat.ADDRESS_FUNCTIONS, cat.HOST_ADDRESS_FUNCTIONS):
        assert all("." in name and not name.startswith("np.") for name in table)
    assert set(cat.MYPY_FULLNAMES.values()) <= cat.TABLE_SINKS


# ------------------------------------------------------------- issue 23 generalization

ROWS = """
def device_rows(ts, n):
    rows = [(t.data_ptr(), n) for t in ts]
    return torch.tensor([p for p, _ in rows], dtype=torch.int64)

def sizes_of_rows(ts, n):
    rows = [(t.data_ptr(), n) for t in ts]
    return torch.tensor([s for _, s in rows], dtype=torch.int64)

def pinned_rows(n):
    staging = torch.empty(n, pin_memory=True)
    rows = []
    rows.append((staging.data_ptr(), n))
    return torch.tensor([p for p, _ in rows], dtype=torch.int64)
"""


def test_lists_of_tuples_keep_each_position() -> None:
    """(address, size) rows: the addresses are found, the sizes are not addresses, and
    pinned host addresses stay host addresses (DP008, not a defect)."""
    assert codes(ROWS) == [(4, "DP002"), (14, "DP008")]


def test_ctypes_value_of_allocator_wrappers_is_an_address() -> None:
    src = (
        "def shared(lib, n, handle):\n"
        "    mine = lib.cudaMalloc(n)\n"
        "    ptrs = [mine.value, lib.cudaIpcOpenMemHandle(handle).value]\n"
        "    return torch.tensor(ptrs, dtype=torch.int64)\n"
    )
    assert codes(src) == [(4, "DP002")]


def test_concatenating_arrays_named_for_addresses_is_not_a_float64_loss() -> None:
    src = (
        "def joined(src_ptrs, dst_ptrs):\n"
        "    return np.concatenate([src_ptrs, dst_ptrs])\n"
        "def real(ts):\n"
        "    return np.concatenate([[t.data_ptr() for t in ts], [4096]])\n"
    )
    assert codes(src) == [(4, "DP002")]  # int64 arrays join into int64; Python ints do not


PROPERTY = """
class Sequence:
    @property
    def blocks_ptr(self) -> int:
        return self._block_ids.data_ptr()

    @property
    def length(self) -> int:
        return self._length

class Batch:
    def __init__(self):
        self._blocks = []
        self._lens = []

    def insert(self, seq):
        self._blocks.append(seq.blocks_ptr)
        self._lens.append(seq.length)

    def finish(self):
        return torch.tensor(self._blocks), torch.tensor(self._lens)
"""


def test_addresses_behind_a_property_of_another_class() -> None:
    """A list attribute filled in one method from another class's property returning
    ``data_ptr()``, built into a table in a third method."""
    assert codes(PROPERTY) == [(21, "DP002")]
    other = PROPERTY.replace("return self._block_ids.data_ptr()", "return self._index")
    assert codes(other) == []
