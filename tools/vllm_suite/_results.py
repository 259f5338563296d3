"""Read pytest's JUnit XML into per-file counts; write the results table."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

OUTCOMES = ("passed", "failed", "skipped")


@dataclass
class VariantResult:
    """One pytest run: per test path, the counts, and the ids of the tests that failed."""

    variant: str
    command: str
    seconds: float
    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    """test id -> the first line of its failure or error message."""

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), indent=1))

    @classmethod
    def load(cls, path: Path) -> VariantResult:
        return cls(**json.loads(path.read_text()))


def test_id(tree: Path, classname: str, name: str) -> str:
    """``path/to/test_x.py::Class::name`` from a JUnit ``classname`` and ``name``."""
    parts = classname.split(".")
    for cut in range(len(parts), 0, -1):
        path = "/".join(parts[:cut]) + ".py"
        if (tree / path).is_file():
            return "::".join([path, *parts[cut:], name])
    return f"{classname}::{name}"


def read_junit(xml: Path, tree: Path, paths: Sequence[str], result: VariantResult) -> None:
    """Count ``xml``'s test cases into ``result`` under the entry of ``paths`` holding each
    (an entry no test ran under stays absent: ``-`` in the table)."""
    for case in ET.parse(xml).getroot().iter("testcase"):
        tid = test_id(tree, case.get("classname", ""), case.get("name", ""))
        owner = next((p for p in paths if tid.startswith(p.rstrip("/"))), None)
        if owner is None:
            continue
        bad = case.find("failure")
        if bad is None:
            bad = case.find("error")
        if bad is not None:
            outcome = "failed"
            message = (bad.get("message") or "").strip()
            result.failed[tid] = message.splitlines()[0][:200] if message else "(no message)"
        elif case.find("skipped") is not None:
            outcome = "skipped"
        else:
            outcome = "passed"
        result.counts.setdefault(owner, dict.fromkeys(OUTCOMES, 0))[outcome] += 1


def table(results: Iterable[VariantResult], paths: Sequence[str]) -> str:
    """Markdown: one row per test path, one column per variant, ``passed / failed / skipped``."""
    rs = list(results)
    head = "| file | " + " | ".join(r.variant for r in rs) + " |"
    rule = "|---|" + "---|" * len(rs)
    rows = [head, rule]
    for path in paths:
        cells = []
        for r in rs:
            c = r.counts.get(path)
            cells.append("-" if c is None else " / ".join(str(c[o]) for o in OUTCOMES))
        rows.append(f"| `{path}` | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def failures(results: Iterable[VariantResult]) -> str:
    """Markdown: the failed test ids of each variant (or that none failed)."""
    lines: list[str] = []
    for r in results:
        if not r.failed:
            lines.append(f"- **{r.variant}**: none")
            continue
        lines.append(f"- **{r.variant}** ({len(r.failed)}):")
        lines.extend(f"  - `{tid}`: {msg}" for tid, msg in sorted(r.failed.items()))
    return "\n".join(lines)


def exclusions(excluded: Mapping[str, str]) -> str:
    """Markdown: each excluded test id and why."""
    return "\n".join(f"- `{tid}`: {why}" for tid, why in sorted(excluded.items()))
