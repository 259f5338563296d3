"""The marker type that ``devptr.mypy_plugin`` gives to raw device addresses.

Never instantiated at run time. Under the plugin, ``Tensor.data_ptr()`` returns
``RawAddress`` (a subclass of ``int``, so every existing use still type-checks), and
``RawAddress + int`` stays a ``RawAddress``; the plugin reports where one reaches an
integer table.
"""

from __future__ import annotations


class RawAddress(int):
    """A raw device address as returned by ``data_ptr()`` (static marker only)."""

    __slots__ = ()
