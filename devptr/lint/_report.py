"""Output formats for ``devptr check``: text, JSON, GitHub annotations, SARIF 2.1.0."""

from __future__ import annotations

import enum
import json
import os
import urllib.parse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from devptr.lint.engine import Finding
from devptr.lint.rules import RULES, Rule

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SRCROOT = "%SRCROOT%"
"""The SARIF ``uriBaseId`` of result locations: the working directory of the run."""
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


def _folder_uri(folder: Path) -> str:
    uri = folder.as_uri()
    return uri if uri.endswith("/") else uri + "/"


def artifact_location(path: str, root: Path) -> dict[str, str]:
    """The SARIF ``artifactLocation`` of *path*: a percent-encoded URI relative to *root*
    with ``uriBaseId`` %SRCROOT%, or an absolute ``file:`` URI for a path outside *root*.

    Spaces, ``%``, ``#``, ``?`` and non-ASCII characters are percent-encoded (UTF-8), so
    the URI names exactly the file (a raw ``#`` would start a fragment).
    """
    absolute = Path(os.path.abspath(path))
    try:
        rel = absolute.relative_to(root)
    except ValueError:
        return {"uri": absolute.as_uri()}
    return {"uri": urllib.parse.quote(rel.as_posix(), safe="/"), "uriBaseId": SRCROOT}


def _sarif(findings: Sequence[Finding], errors: Sequence[tuple[str, str]],
           skipped: Sequence[tuple[str, str]]) -> dict[str, Any]:
    from devptr import __version__

    root = Path(os.path.abspath(os.getcwd()))

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
                    "artifactLocation": artifact_location(f.path, root),
                    "region": {"startLine": f.line, "startColumn": f.col + 1,
                               "endLine": f.end_line, "endColumn": f.end_col + 1},
                }
            }],
        }
        for f in findings
    ]
    notifications = [
        {"level": level, "message": {"text": message},
         "locations": [{"physicalLocation": {"artifactLocation": artifact_location(path, root)}}]}
        for level, items in (("error", errors), ("note", skipped))
        for path, message in items
    ]
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "devptr check", "version": __version__,
                                "rules": rules}},
            "originalUriBaseIds": {SRCROOT: {"uri": _folder_uri(root)}},
            "results": results,
            "invocations": [{"executionSuccessful": not errors,
                             "toolExecutionNotifications": notifications}],
        }],
    }


def render(findings: Sequence[Finding], errors: Sequence[tuple[str, str]],
           fmt: OutputFormat, *, skipped: Sequence[tuple[str, str]] = ()) -> str:
    """Render *findings*, files that could not be checked (*errors*, which make the run
    fail) and paths skipped on purpose (*skipped*: a FIFO, a link out of the tree) in *fmt*.

    Text: ``path:line:col: DP001 message`` (1-based column), one per line.
    JSON: ``{"findings": [...], "errors": [...]}`` with rule name, category, span and fix.
    GitHub: ``::error file=...,line=...,col=...,title=DP001::message`` workflow commands.
    SARIF: a SARIF 2.1.0 log for code scanning: locations are percent-encoded URIs
    relative to ``%SRCROOT%`` (the working directory, in ``originalUriBaseIds``); errors and
    skipped paths are tool execution notifications, and any error makes
    ``executionSuccessful`` false.
    """
    if fmt is OutputFormat.SARIF:
        return json.dumps(_sarif(findings, errors, skipped), indent=2)
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
            "skipped": [{"path": p, "message": m} for p, m in skipped],
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
        for level, items in (("error", errors), ("notice", skipped)):
            for path, message in items:
                what = _escape_github(message if level == "error" else f"skipped: {message}")
                lines.append(f"::{level} file={_escape_github_prop(path)}::{what}")
        return "\n".join(lines)
    for f in findings:
        lines.append(f"{f.path}:{f.line}:{f.col + 1}: {f.code} {f.message}")
    for path, message in errors:
        lines.append(f"{path}: error: {message}")
    for path, message in skipped:
        lines.append(f"{path}: skipped: {message}")
    return "\n".join(lines)
