"""Add ``import devptr`` where a rewritten module can use it: libcst's own
:class:`~libcst.codemod.visitors.AddImportsVisitor` (after the docstring, the ``from
__future__`` imports and the module's first block of imports; unchanged when ``devptr`` is
already imported)."""

from __future__ import annotations

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import AddImportsVisitor


def ensure_devptr_import(module: cst.Module) -> cst.Module:
    """``module`` with ``import devptr`` added where needed (unchanged when present)."""
    context = CodemodContext()
    AddImportsVisitor.add_needed_import(context, "devptr")
    return AddImportsVisitor(context).transform_module(module)
