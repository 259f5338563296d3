"""The vendorable module, :mod:`devptr.vendor.ptrtable`: the core's lowest layer, in one file
that depends only on torch and numpy, for engines that copy it (e.g. ``vllm/utils/ptrtable.py``).

Inside devptr the module raises devptr's own error classes: this package installs them under
the module's error names before anyone can use it (the file declares the same classes for
the engines that copy it). The error classes live in :mod:`devptr._errors`, which imports
nothing, so devptr's checker and mypy plugin get them without importing torch or numpy.
"""

from devptr import _errors
from devptr.vendor import ptrtable

ERROR_NAMES = (
    "AddressOverflowError",
    "AddressRangeError",
    "CapacityError",
    "DevPtrError",
    "LengthMismatchError",
    "PtrTypeError",
    "UnknownBackendError",
)
"""The errors the vendorable module raises: one class each, devptr's (and each its built-in)."""

for _name in ERROR_NAMES:
    setattr(ptrtable, _name, getattr(_errors, _name))
