"""One planned rewrite: which node of the input tree is replaced, and by what."""

from __future__ import annotations

from collections.abc import Callable

import attrs
import libcst as cst

from devptr.lint.engine import Finding, Fix
from devptr.migrate._spans import SpanIndex


@attrs.frozen
class Edit:
    """Replace ``target`` (a node of the input tree) with ``replacement``.

    ``helper``: the name of a two's-complement helper whose call this edit replaces (its
    definition is removed when nothing uses it any more). ``module``: a module whose
    ``import`` the edit may leave unused (removed then).
    """

    target: cst.CSTNode
    replacement: cst.CSTNode
    helper: str | None = None
    module: str | None = None


Builder = Callable[[Finding, Fix, SpanIndex], "Edit | None"]
"""Builds the edit of one fix kind from the nodes at the fix's spans; None when the
fix's shape has no rewrite here (the finding then gets a TODO)."""
