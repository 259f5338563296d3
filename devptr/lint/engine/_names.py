"""Import-aware qualified names: ``T.tensor`` -> ``torch.tensor`` after ``import torch as T``.

One :class:`Names` per module, built from every ``import`` in it (module level and inside
functions: the engine does not model import scoping). Unimported heads that are the usual
spellings of a library (``np``, ``torch``) resolve to it too, so snippets without imports
are still understood.
"""

from __future__ import annotations

import ast
from typing import Final

_CONVENTIONAL: Final = {"np": "numpy", "numpy": "numpy", "torch": "torch", "ctypes": "ctypes",
                        "array": "array", "struct": "struct", "mmap": "mmap"}


_BLOCKS: Final = ("body", "orelse", "finalbody")


def statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements of *body* and of every block nested in it (branches, loops, ``with``,
    handlers, cases, function and class bodies), depth first in the order they are written.

    Statements only, no expressions: cheap enough for every parsed file.
    """
    found: list[ast.stmt] = []
    stack: list[list[ast.stmt]] = [body]
    while stack:
        block = stack.pop()
        for i, stmt in enumerate(block):
            found.append(stmt)
            nested: list[list[ast.stmt]] = []
            for field in _BLOCKS:
                inner = getattr(stmt, field, None)
                if inner:
                    nested.append(inner)
            for group in ("handlers", "cases"):
                items = getattr(stmt, group, None)
                if items:
                    nested.extend(item.body for item in items)
            if nested:
                # finish this block after the nested ones, depth first as written
                stack.append(block[i + 1:])
                stack.extend(reversed(nested))
                break
    return found


def _imports(body: list[ast.stmt]) -> list[ast.Import | ast.ImportFrom]:
    """Import statements of *body*, nested blocks included, in the order they appear."""
    return [s for s in statements(body) if isinstance(s, ast.Import | ast.ImportFrom)]


class Names:
    """Resolve names of one module through its imports.

    Parameters
    ----------
    tree
        The module.
    module
        The module's dotted name (``pkg.sub.mod``), for relative imports; ``""`` if unknown.
    is_package
        Whether the module is a package ``__init__`` (relative imports start one level up).
    """

    def __init__(self, tree: ast.Module, module: str = "", *, is_package: bool = False) -> None:
        self.module = module
        self.aliases: dict[str, str] = {}
        package = module if is_package else module.rpartition(".")[0]
        for node in _imports(tree.body):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname is not None:
                        self.aliases[alias.asname] = alias.name
                    else:
                        head = alias.name.partition(".")[0]
                        self.aliases[head] = head
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".") if package else []
                    keep = len(parts) - (node.level - 1)
                    prefix = ".".join(parts[: max(keep, 0)])
                    base = f"{prefix}.{base}".strip(".") if base else prefix
                for alias in node.names:
                    if alias.name != "*":
                        self.aliases[alias.asname or alias.name] = f"{base}.{alias.name}"

    def qual(self, node: ast.AST) -> str | None:
        """Fully qualified name of a Name/Attribute chain, or None for other expressions.

        A name defined in this module (not imported) resolves to ``<module>.<name>`` only
        through :meth:`local`; here it stays bare (``helper``).
        """
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        head = self.aliases.get(node.id) or _CONVENTIONAL.get(node.id) or node.id
        parts.append(head)
        return ".".join(reversed(parts))

    def is_imported(self, name: str) -> bool:
        """Whether *name* is bound by an import in this module."""
        return name in self.aliases
