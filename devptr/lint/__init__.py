"""Enforcement of the devptr convention: rule catalogue, AST checker, mypy plugin.

Importing this package imports neither mypy nor libcst.
"""

from devptr.lint.rules import RULES, Rule, RuleInfo

__all__ = ["RULES", "Rule", "RuleInfo"]
