"""The EC connector's demo section: fake-address descriptors exact, real round trip exact."""

from __future__ import annotations

import io

from rich.console import Console

from devptr.demo import SECTIONS
from devptr.demo.ec import section


def test_ec_section_is_listed_and_exact() -> None:
    assert ("devptr.demo.ec", "section") in SECTIONS
    buf = io.StringIO()
    section(Console(file=buf, width=200, color_system=None))
    out = buf.getvalue()
    assert "CUDA op got int64 (src, dst and sizes): all bit-exact" in out
    assert "byte-exact" in out and "MISMATCH" not in out
    assert "0xffff81ab54e01000" in out and "-138902113349632" in out  # U64 and its I64 twin
