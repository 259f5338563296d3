"""``[tool.devptr]`` configuration from ``pyproject.toml``.

Keys: ``select`` and ``ignore`` (lists of rule codes, prefixes such as ``"DP00"``,
categories such as ``"convention"``, or ``"ALL"``; parsed by
:func:`devptr.lint._selection.parse_selection`), ``exclude`` (glob patterns matched against
paths relative to the pyproject's folder, and against every path component). Without
``select`` only the defect rules run.
"""

from __future__ import annotations

import fnmatch
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from devptr.lint._selection import parse_selection, resolve
from devptr.lint.engine._files import default_excluded
from devptr.lint.errors import ConfigError, SelectionError
from devptr.lint.rules import Rule


@attrs.frozen
class Config:
    """Which rules run and which paths are skipped.

    Parameters
    ----------
    select
        Selection items to enable (default None: the defect rules).
    ignore
        Selection items to disable (applied after ``select``).
    exclude
        Glob patterns of paths to skip.
    root
        Folder that relative exclude patterns are matched against.
    """

    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    root: Path = attrs.field(factory=Path.cwd)

    def rules(self) -> frozenset[Rule]:
        """The enabled rules."""
        return resolve(self.select, self.ignore)

    def is_excluded(self, path: Path) -> bool:
        """Whether *path* matches an exclude pattern (or a default one like ``.git``)."""
        if default_excluded(path):
            return True
        if not self.exclude:
            return False
        try:
            rel = path.resolve().relative_to(self.root.resolve()).as_posix()
        except ValueError:
            rel = path.as_posix()
        for pattern in self.exclude:
            pat = pattern.rstrip("/")
            if fnmatch.fnmatch(rel, pat) or fnmatch.fnmatch(rel, pat + "/*"):
                return True
            if fnmatch.fnmatch(path.as_posix(), pat) or any(
                fnmatch.fnmatch(p, pat) for p in path.parts
            ):
                return True
        return False


def _strings(value: Any, key: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"[tool.devptr] {key} must be a list of strings (got {value!r})")
    return list(value)


def find_pyproject(start: Path) -> Path | None:
    """The nearest ``pyproject.toml`` at or above *start*."""
    here = start.resolve()
    if here.is_file():
        here = here.parent
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def load_toml(path: Path) -> dict[str, Any]:
    """Parse a TOML file (tomllib, or tomli on Python 3.10); the one TOML reader of devptr."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    with path.open("rb") as f:
        data: dict[str, Any] = tomllib.load(f)
    return data


def load_config(pyproject: Path | None) -> Config:
    """Read ``[tool.devptr]`` from *pyproject* (defaults when None or absent)."""
    if pyproject is None:
        return Config()
    try:
        data = load_toml(pyproject)
    except ValueError as exc:  # tomllib.TOMLDecodeError
        raise ConfigError(f"{pyproject}: not valid TOML ({exc})") from None
    table = data.get("tool", {}).get("devptr", {})
    if not isinstance(table, dict):
        raise ConfigError("[tool.devptr] must be a table")
    unknown = set(table) - {"select", "ignore", "exclude"}
    if unknown:
        raise ConfigError(f"[tool.devptr] unknown keys: {sorted(unknown)}")
    select = table.get("select")
    return Config(
        select=None if select is None else parse_selection(
            _strings(select, "select"), f"{pyproject}: [tool.devptr] select"
        ),
        ignore=parse_selection(
            _strings(table.get("ignore", []), "ignore"), f"{pyproject}: [tool.devptr] ignore",
            allow_empty=True,
        ),
        exclude=tuple(_strings(table.get("exclude", []), "exclude")),
        root=pyproject.parent,
    )


def with_overrides(
    config: Config,
    select: Sequence[str] | None,
    ignore: Sequence[str] | None,
    exclude: Sequence[str] | None,
    *,
    extend_select: Sequence[str] | None = None,
) -> Config:
    """Apply command-line options: ``--select`` replaces the configured selection,
    ``--extend-select``/``--ignore``/``--exclude`` extend theirs.

    Raises
    ------
    SelectionError
        Naming the flag (``--select: unknown rule selector 'DP9'``).
    """
    chosen = parse_selection(select, "--select") if select is not None else config.select
    extra = (
        parse_selection(extend_select, "--extend-select") if extend_select is not None else ()
    )
    if extra:
        chosen = (*(chosen if chosen is not None else ("defect",)), *extra)
    return attrs.evolve(
        config,
        select=chosen,
        ignore=(*config.ignore, *parse_selection(ignore, "--ignore"))
        if ignore is not None else config.ignore,
        exclude=(*config.exclude, *split_exclude(exclude)) if exclude else config.exclude,
    )


def command_config(
    paths: Sequence[Path],
    config_file: Path | None,
    select: Sequence[str] | None,
    ignore: Sequence[str] | None,
    exclude: Sequence[str] | None = None,
    *,
    extend_select: Sequence[str] | None = None,
) -> Config:
    """The configuration ``devptr check`` and ``devptr migrate`` run with, read the same
    way for both: ``[tool.devptr]`` of *config_file* (default: the nearest
    ``pyproject.toml`` at or above the first path), then the command-line options
    (:func:`with_overrides`).

    Raises
    ------
    SelectionError
        An unknown or empty selection (naming its flag or key), an invalid table, or a
        selection that leaves no rule to run (``--select DP001 --ignore DP001``).
    OSError
        When *config_file* cannot be read.
    """
    pyproject = config_file if config_file is not None else find_pyproject(
        paths[0] if paths else Path()
    )
    config = with_overrides(load_config(pyproject), select, ignore, exclude,
                            extend_select=extend_select)
    if not config.rules():
        raise SelectionError(
            f"the selection enables no rule (select {list(config.select or ['defect'])}, "
            f"ignore {list(config.ignore)})"
        )
    return config


def split_exclude(values: Sequence[str]) -> list[str]:
    """``--exclude a,b --exclude c`` -> ``[a, b, c]``."""
    return [v.strip() for value in values for v in value.split(",") if v.strip()]
