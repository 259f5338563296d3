"""``devptr demo``: each section shows one part of the library on the installed torch.

A section is a callable taking a rich Console; later parts of the library add theirs to
``SECTIONS`` (in the order a reader should see them).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable

from rich.console import Console

Section = Callable[[Console], None]

# module path, function name; imported lazily so a missing optional dependency
# (triton) disables one section, with a message, not the whole demo.
SECTIONS: list[tuple[str, str]] = [
    ("devptr.demo.core", "section"),
    ("devptr.demo.mamba", "section"),
    ("devptr.demo.lamport", "section"),
    ("devptr.demo.ec", "section"),
]


def run_demo(console: Console | None = None) -> None:
    """Run every demo section in order.

    Without a console: the terminal's width; piped output (CI logs, files) is 120 wide
    (no truncated addresses) unless ``COLUMNS`` says otherwise.
    """
    con = console or Console()
    if console is None and not con.is_terminal and not os.environ.get("COLUMNS") and con.width < 120:
        con = Console(width=120)
    for module, name in SECTIONS:
        fn: Section = getattr(importlib.import_module(module), name)
        fn(con)
