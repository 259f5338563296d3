"""Output formats for ``devptr check``: text, JSON, GitHub annotations."""

from __future__ import annotations

import enum
import json
from collections.abc import Sequence

from devptr.lint._findings import Finding
from devptr.lint.rules import RULES


class OutputFormat(str, enum.Enum):
    """``--format`` choices."""

    TEXT = "text"
    JSON = "json"
    GITHUB = "github"


def _escape_github(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_github_prop(text: str) -> str:
    return _escape_github(text).replace(":", "%3A").replace(",", "%2C")


def render(findings: Sequence[Finding], errors: Sequence[tuple[str, str]],
           fmt: OutputFormat) -> str:
    """Render *findings* (and files that could not be checked) in *fmt*.

    Text: ``path:line:col: DP001 message (fix: ...)``, one per line.
    JSON: ``{"findings": [...], "errors": [...]}`` with rule name and fix per finding.
    GitHub: ``::error file=...,line=...,col=...,title=DP001::message`` workflow commands.
    """
    if fmt is OutputFormat.JSON:
        payload = {
            "findings": [
                {
                    "path": f.path,
                    "line": f.line,
                    "column": f.col,
                    "code": f.code,
                    "name": RULES[f.rule].name,
                    "message": f.message,
                    "fix": RULES[f.rule].fix,
                }
                for f in findings
            ],
            "errors": [{"path": p, "message": m} for p, m in errors],
        }
        return json.dumps(payload, indent=2)
    lines: list[str] = []
    if fmt is OutputFormat.GITHUB:
        for f in findings:
            props = (
                f"file={_escape_github_prop(f.path)},line={f.line},col={f.col},"
                f"title={f.code} {RULES[f.rule].name}"
            )
            msg = _escape_github(f"{f.message}. Fix: {RULES[f.rule].fix}")
            lines.append(f"::error {props}::{msg}")
        for path, message in errors:
            lines.append(f"::warning file={_escape_github_prop(path)}::{_escape_github(message)}")
        return "\n".join(lines)
    for f in findings:
        lines.append(f"{f.path}:{f.line}:{f.col}: {f.code} {f.message}")
    for path, message in errors:
        lines.append(f"{path}: error: {message}")
    return "\n".join(lines)
