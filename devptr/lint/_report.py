"""Output formats for ``devptr check``: text, JSON, GitHub annotations, SARIF 2.1.0."""

from __future__ import annotations

import enum
import json
from collections.abc import Sequence
from typing import Any

from devptr.lint.engine import Finding
from devptr.lint.rules import RULES, Rule

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {"defect": "error", "convention": "warning", "host": "note"}


class OutputFormat(str, enum.Enum):
    """``--format`` choices."""

    TEXT = "text"
    JSON = "json"
    GITHUB = "github"
    SARIF = "sarif"


def _escape_github(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_github_prop(text: str) -> str:
    return _escape_github(text).replace(":", "%3A").replace(",", "%2C")


def _fix_json(f: Finding) -> dict[str, Any] | None:
    if f.fix is None:
        return None
    return {
        "kind": f.fix.kind.value,
        "safety": f.fix.safety,
        "unsafe_reason": f.fix.unsafe_reason or None,
    }


def _sarif(findings: Sequence[Finding], errors: Sequence[tuple[str, str]]) -> dict[str, Any]:
    from devptr import __version__

    rules = [
        {
            "id": info.rule.value,
            "name": info.name,
            "shortDescription": {"text": info.summary},
            "fullDescription": {"text": info.why},
            "help": {"text": f"Write instead: {info.fix}"},
            "defaultConfiguration": {"level": _LEVEL[info.category],
                                     "enabled": info.default},
            "properties": {"category": info.category},
        }
        for info in RULES.values()
    ]
    index = {rule: i for i, rule in enumerate(Rule)}
    results = [
        {
            "ruleId": f.code,
            "ruleIndex": index[f.rule],
            "level": _LEVEL[f.category],
            "message": {"text": f.message},
            "locations": [{
                "physicalLocation": {
                    "artifactLocation": {"uri": f.path.replace("\\", "/")},
                    "region": {"startLine": f.line, "startColumn": f.col + 1,
                               "endLine": f.end_line, "endColumn": f.end_col + 1},
                }
            }],
        }
        for f in findings
    ]
    notifications = [
        {"level": "warning", "message": {"text": message},
         "locations": [{"physicalLocation": {"artifactLocation": {"uri": path}}}]}
        for path, message in errors
    ]
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "devptr check", "version": __version__,
                                "rules": rules}},
            "results": results,
            "invocations": [{"executionSuccessful": True,
                             "toolExecutionNotifications": notifications}],
        }],
    }


def render(findings: Sequence[Finding], errors: Sequence[tuple[str, str]],
           fmt: OutputFormat) -> str:
    """Render *findings* (and files that could not be checked) in *fmt*.

    Text: ``path:line:col: DP001 message`` (1-based column), one per line.
    JSON: ``{"findings": [...], "errors": [...]}`` with rule name, category, span and fix.
    GitHub: ``::error file=...,line=...,col=...,title=DP001::message`` workflow commands.
    SARIF: a SARIF 2.1.0 log for code scanning.
    """
    if fmt is OutputFormat.SARIF:
        return json.dumps(_sarif(findings, errors), indent=2)
    if fmt is OutputFormat.JSON:
        payload = {
            "findings": [
                {
                    "path": f.path,
                    "line": f.line,
                    "column": f.col + 1,
                    "end_line": f.end_line,
                    "end_column": f.end_col + 1,
                    "code": f.code,
                    "name": RULES[f.rule].name,
                    "category": f.category,
                    "message": f.message,
                    "fix": RULES[f.rule].fix,
                    "autofix": _fix_json(f),
                }
                for f in findings
            ],
            "errors": [{"path": p, "message": m} for p, m in errors],
        }
        return json.dumps(payload, indent=2)
    lines: list[str] = []
    if fmt is OutputFormat.GITHUB:
        for f in findings:
            level = "error" if f.category == "defect" else "warning"
            props = (
                f"file={_escape_github_prop(f.path)},line={f.line},col={f.col + 1},"
                f"endLine={f.end_line},endColumn={f.end_col + 1},"
                f"title={f.code} {RULES[f.rule].name}"
            )
            msg = _escape_github(f"{f.message}. Fix: {RULES[f.rule].fix}")
            lines.append(f"::{level} {props}::{msg}")
        for path, message in errors:
            lines.append(f"::warning file={_escape_github_prop(path)}::{_escape_github(message)}")
        return "\n".join(lines)
    for f in findings:
        lines.append(f"{f.path}:{f.line}:{f.col + 1}: {f.code} {f.message}")
    for path, message in errors:
        lines.append(f"{path}: error: {message}")
    return "\n".join(lines)
