"""The engine decides: ``migrate_source`` rewrites from ``devptr check``'s findings.

A module where the engine finds nothing is left as it is; a fix is applied by default only
where the engine reports the site fixable and safe (and the codemod agrees); a rewrite the
codemods could spell but the engine does not confirm waits for ``--unsafe-fixes``.
"""

from __future__ import annotations

import textwrap

from devptr.lint.engine import analyze_source
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
    # the codemods alone would rewrite it (an unsafe fix: the container is not proven)
    alone = migrate_source(UNTYPED, filename="m.py", unsafe_fixes=True)
    assert alone.unsafe == {Rule.DP001: 1}


def test_fix_the_engine_does_not_confirm_waits_for_the_flag() -> None:
    code = CONFIRMED + UNTYPED
    out = migrate_source(code, filename="m.py")
    assert out.rewrites == {Rule.DP001: 1}  # the confirmed one
    assert out.todos == {Rule.DP001: 1}  # the other: a TODO, not a rewrite
    assert "dst_np[offset] = state.data_ptr()" in out.new
    forced = migrate_source(code, filename="m.py", unsafe_fixes=True)
    assert forced.rewrites == {Rule.DP001: 2} and forced.unsafe == {Rule.DP001: 1}


def test_comprehension_table_is_safe_as_list_of_the_source() -> None:
    """The engine calls collapsing to ``ptr_tensor(E)`` unsafe; ``list(E)`` is not."""
    code = textwrap.dedent(
        """
        import torch


        def table(layers):
            return torch.tensor([x.data_ptr() for x in layers], dtype=torch.int64)
        """
    )
    assert _fixable(code) == [(Rule.DP002, "unsafe")]
    out = migrate_source(code, filename="m.py")
    assert "devptr.ptr_tensor(list(layers), encoding=devptr.Encoding.I64)" in out.new
    assert out.unsafe == {}
