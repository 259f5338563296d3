"""The engine decides: ``migrate_source`` rewrites from ``devptr check``'s findings.

A module where the engine finds nothing is left as it is; a fix is applied by default only
where the engine reports the site fixable and safe; an unsafe fix waits for
``--unsafe-fixes`` (its TODO quotes the engine's reason); a finding without a fix gets a
TODO.
"""

from __future__ import annotations

import textwrap

from devptr.lint.engine import Span, analyze_source
from devptr.lint.rules import DEFAULT_RULES, Rule
from devptr.migrate import migrate_source

CONFIRMED = textwrap.dedent(
    """
    import torch


    def layer_table(layers):
        table = torch.zeros(len(layers), dtype=torch.int64)
        for i, layer in enumerate(layers):
            table[i] = layer.data_ptr()
        return table
    """
)

UNTYPED = textwrap.dedent(
    """
    def collect(bufs, state, offset):
        dst_np = bufs.dst_ptrs.np
        dst_np[offset] = state.data_ptr()
    """
)


def _fixable(code: str) -> list[tuple[Rule, str]]:
    return [
        (f.rule, f.fix.safety)
        for f in analyze_source(code, "m.py", rules=frozenset(Rule))
        if f.fix is not None
    ]


def test_engine_confirmed_safe_fix_is_applied_by_default() -> None:
    assert _fixable(CONFIRMED) == [(Rule.DP001, "safe")]
    out = migrate_source(CONFIRMED, filename="m.py")
    assert out.rewrites == {Rule.DP001: 1} and out.unsafe == {} and out.todos == {}
    assert "devptr.store(table, i, devptr.DevicePtr.of(layer))" in out.new


def test_module_without_engine_findings_is_left_alone() -> None:
    # default rules (defects): nothing; DP006 (convention: raw addresses in an untyped table) only
    # when selected, and it has no fix
    assert analyze_source(UNTYPED, "m.py", rules=DEFAULT_RULES) == []
    assert all(f.fix is None for f in analyze_source(UNTYPED, "m.py"))
    for unsafe in (False, True):
        assert not migrate_source(UNTYPED, filename="m.py", unsafe_fixes=unsafe).changed


def test_finding_without_a_fix_gets_a_todo_even_with_unsafe_fixes() -> None:
    out = migrate_source(UNTYPED, filename="m.py", rules=[Rule.DP006], unsafe_fixes=True)
    assert out.rewrites == {} and out.todos == {Rule.DP006: 1}
    assert "# TODO[devptr]: DP006 " in out.new and "dst_np[offset] = state.data_ptr()" in out.new


def test_unsafe_fix_waits_for_the_flag_and_quotes_the_engine() -> None:
    code = textwrap.dedent(
        """
        import torch

        t = torch.zeros(4, dtype=torch.int64)
        t[0:2] = [x.data_ptr() for x in xs]
        """
    )
    [finding] = [f for f in analyze_source(code, "m.py") if f.fix is not None]
    assert finding.fix is not None and finding.fix.safety == "unsafe"
    out = migrate_source(code, filename="m.py")
    assert out.rewrites == {} and out.todos == {Rule.DP001: 1}
    assert f"unsafe fix not applied ({finding.fix.unsafe_reason})" in " ".join(out.warnings)
    forced = migrate_source(code, filename="m.py", unsafe_fixes=True)
    assert forced.rewrites == {Rule.DP001: 1} and forced.unsafe == {Rule.DP001: 1}
    assert "devptr.store(t, slice(0, 2), [devptr.DevicePtr.of(x) for x in xs])" in forced.new


def test_comprehension_table_is_safe_as_list_of_the_source() -> None:
    """The engine calls the fix safe because the codemod passes ``list(E)``, never ``E``."""
    code = textwrap.dedent(
        """
        import torch


        def table(layers):
            return torch.tensor([x.data_ptr() for x in layers], dtype=torch.int64)
        """
    )
    assert _fixable(code) == [(Rule.DP002, "safe")]
    out = migrate_source(code, filename="m.py")
    assert "devptr.ptr_tensor(list(layers), encoding=devptr.Encoding.I64)" in out.new
    assert out.unsafe == {}


def test_fix_spans_name_what_the_rewrite_needs() -> None:
    """The codemod builds from the fix's spans and facts only (no recognition of its own)."""
    code = "import torch\nt = torch.tensor([a.data_ptr(), b.x.data_ptr()], dtype=torch.int64, device=d)\n"
    [finding] = analyze_source(code, "m.py")
    fix = finding.fix
    assert fix is not None and fix.safety == "safe"
    lines = code.splitlines()

    def text(span: Span | None) -> str:
        assert span is not None and span.line == span.end_line
        return lines[span.line - 1][span.col : span.end_col]

    assert sorted(text(s) for s in fix.all_spans("owner")) == ["a", "b.x"]
    assert (text(fix.span("device")), text(fix.span("dtype")), fix.fact("encoding")) == (
        "d", "torch.int64", "I64"
    )
    out = migrate_source(code, filename="m.py")
    assert "devptr.ptr_tensor([a, b.x], encoding=devptr.Encoding.I64, device=d)" in out.new
