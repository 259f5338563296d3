"""What devptr's own upper layers use from the core beyond its public API.

The kernels, the adapters, ``devptr selftest``, ``devptr demo`` and the CLI import the
core's public names from :mod:`devptr` and everything else from here; no module above the
core imports another private core module (an import-linter contract in ``pyproject.toml``
checks it). So this file is the core's internal API: what it lists may change with the
layers above in one commit, and a name that is not here is the core's own business.

This module only re-exports; each name is defined (and documented) in the core module
named beside it.
"""

from __future__ import annotations

from devptr import _checked as checked_registry  # the live switch and the extent registry
from devptr._convert import (  # validators and conversions of caller input
    U64,
    Addresses,
    U64Array,
    index_value,
    positive_int,
    ptr_array,
    uint_array,
    uint_value,
)
from devptr._errors import describe, hexaddr  # message formatting of the taxonomy
from devptr._identity import IdentityCache  # the one cache policy for per-object caches
from devptr._ptr import ADDR_LIMIT, SIGN_BIT, unsigned_address  # the address range
from devptr._storage import (  # storage and the one device resolver
    Storage,
    check_encoding_arg,
    current_device,
    reachable_device,
    resolve_device,
)
from devptr._table_base import TableBase, guarded  # the table base and its thread guard

__all__ = [
    "ADDR_LIMIT",
    "SIGN_BIT",
    "U64",
    "Addresses",
    "IdentityCache",
    "Storage",
    "TableBase",
    "U64Array",
    "check_encoding_arg",
    "checked_registry",
    "current_device",
    "describe",
    "guarded",
    "hexaddr",
    "index_value",
    "positive_int",
    "ptr_array",
    "reachable_device",
    "resolve_device",
    "uint_array",
    "uint_value",
    "unsigned_address",
]
