"""The registered name of devptr's mypy plugin: ``plugins = ["devptr.mypy_plugin"]``.

The plugin lives in :mod:`devptr.lint.mypy_plugin`; this module keeps the name users put
in their mypy configuration.
"""

from devptr.lint.mypy_plugin import DevptrPlugin, plugin

__all__ = ["DevptrPlugin", "plugin"]
