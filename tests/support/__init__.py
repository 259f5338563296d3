"""Helpers shared by the tests, imported as ``from support.<module> import ...``.

``tests/`` is on ``sys.path`` through pytest's ``pythonpath = ["tests"]`` (pyproject.toml),
so the same import works from any directory and under any pytest import mode. Fakes that
users of devptr may want too live in :mod:`devptr.testing` instead.
"""
