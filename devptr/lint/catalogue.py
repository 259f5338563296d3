"""The one catalogue of address sources, table sinks and encoders.

Fully qualified names (``numpy.array``, not ``np.array``): the engine resolves every name
through the module's imports (``import numpy as N``, ``from torch import tensor``) before
looking it up here, and the mypy plugin maps mypy's own full names onto these through
:data:`MYPY_FULLNAMES`. ``devptr migrate`` consumes the engine's findings and uses this
module for anything it needs to recognize. No other name table exists.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

# --------------------------------------------------------------------- address sources

ADDRESS_METHODS: Final = frozenset({"data_ptr"})
"""Methods returning a raw device address on any receiver: ``Tensor.data_ptr()``,
``untyped_storage().data_ptr()``, ``UntypedStorage.data_ptr()``."""

ADDRESS_METHOD_CLASSES: Final = frozenset(
    {
        "torch._tensor.Tensor",
        "torch._C.TensorBase",
        "torch._C._TensorBase",
        "torch.storage.UntypedStorage",
        "torch.storage.TypedStorage",
        "torch.storage._StorageBase",
        "torch._C.StorageBase",
    }
)
"""Classes (mypy full names) whose ``data_ptr()`` the mypy plugin marks as a raw address."""

PEER_POINTER_ATTRS: Final = frozenset({"buffer_ptrs", "signal_pad_ptrs"})
"""Attributes holding lists of peer device addresses (torch symmetric-memory handles)."""

ADDRESS_FUNCTIONS: Final = frozenset(
    {
        "torch.cuda.caching_allocator_alloc",
        "cupy.cuda.runtime.malloc",
        "cupy.cuda.runtime.mallocAsync",
        "cupy.cuda.runtime.ipcOpenMemHandle",
        "cupy.cuda.runtime.memGetAddressRange",
    }
)
"""Functions returning one raw device address."""

ADDRESS_PAIR_FUNCTIONS: Final = frozenset(
    {
        "cuda.cudart.cudaMalloc",
        "cuda.cudart.cudaMallocAsync",
        "cuda.cudart.cudaMallocManaged",
        "cuda.cudart.cudaIpcOpenMemHandle",
        "cuda.bindings.runtime.cudaMalloc",
        "cuda.bindings.runtime.cudaMallocAsync",
        "cuda.bindings.runtime.cudaMallocManaged",
        "cuda.bindings.runtime.cudaIpcOpenMemHandle",
        "cuda.cuda.cuMemAlloc",
        "cuda.cuda.cuMemAllocAsync",
        "cuda.cuda.cuIpcOpenMemHandle",
        "cuda.bindings.driver.cuMemAlloc",
        "cuda.bindings.driver.cuMemAllocAsync",
        "cuda.bindings.driver.cuMemAddressReserve",
        "cuda.bindings.driver.cuIpcOpenMemHandle",
    }
)
"""cuda-python calls returning ``(error, address)``: the second item is a device address."""

ADDRESS_FUNCTION_SUFFIXES: Final = frozenset(
    {
        "cudaMalloc",
        "cuMemAlloc",
        "cuMemAlloc_v2",
        "cudaIpcOpenMemHandle",
        "cuIpcOpenMemHandle",
        "open_mem_handle",
        "create_shared_buffer",
    }
)
"""Last name of project wrappers around the allocators and IPC openers above (``ops.
create_shared_buffer``, ``cudart.cudaIpcOpenMemHandle``): their result holds device
addresses whatever module provides them."""

CUDA_ARRAY_INTERFACE: Final = "__cuda_array_interface__"
"""``x.__cuda_array_interface__["data"][0]`` is a device address."""

CUPY_POINTER_ATTR: Final = "ptr"
"""``cupy_array.data.ptr`` / ``MemoryPointer.ptr``: a device address."""

VOID_POINTER_TYPES: Final = frozenset({"ctypes.c_void_p", "ctypes.c_size_t", "ctypes.c_uint64"})
"""``ctypes.c_void_p(p).value`` keeps whatever address went in."""

HOST_ADDRESS_FUNCTIONS: Final = frozenset(
    {
        "ctypes.addressof",
        "cupy.cuda.runtime.hostAlloc",
        "cupy.cuda.runtime.mallocHost",
        "cuda.cudart.cudaHostAlloc",
        "cuda.cudart.cudaMallocHost",
        "cuda.bindings.runtime.cudaHostAlloc",
        "cuda.bindings.runtime.cudaMallocHost",
        "cuda.cuda.cuMemHostAlloc",
        "cuda.bindings.driver.cuMemHostAlloc",
    }
)
"""Functions returning a host address (below 2**47): reported by the ``host`` rule only."""

HOST_DEVICE_TYPES: Final = frozenset({"cpu"})
"""torch device types whose memory is host memory: ``device="cpu"``, ``torch.device("cpu")``
(a tensor allocated there, or a class whose device attributes are bound only to it, holds
host addresses)."""

ACCELERATOR_DEVICE_TYPES: Final = frozenset(
    {"cuda", "xpu", "npu", "musa", "hip", "mps", "hpu", "mlu", "xla", "mtia"}
)
"""torch device types with their own memory: a class mentioning one (``"cuda:0"``,
``x.cuda()``, ``torch.xpu``) does not declare itself host-only."""

ACCELERATOR_MODULES: Final = frozenset({"cupy", "cuda", "pycuda", "torch_npu", "torch_musa"})
"""Top-level modules of accelerator runtimes (cuda-python, CuPy, PyCUDA, vendor torch
extensions): using one is a mention of device memory."""

DEVICE_CONSTRUCTOR: Final = "torch.device"
"""``torch.device("cpu")``: a device spelled as an object."""

DEVICE_ATTRIBUTES: Final = frozenset({"device", "device_type"})
"""Attribute names (leading/trailing underscores ignored: ``self.device_``, ``_device``)
through which a class declares the device its tensors live on."""

STRUCT_ENCODERS: Final = frozenset({"struct.pack", "struct.unpack"})
"""``struct.unpack("q", struct.pack("Q", p))[0]``: a two's-complement round trip."""


# -------------------------------------------------------------------------- table sinks

TABLE_CONSTRUCTORS: Final = frozenset(
    {
        "torch.tensor",
        "torch.as_tensor",
        "torch.asarray",
        "torch.LongTensor",
        "numpy.array",
        "numpy.asarray",
        "numpy.asanyarray",
        "numpy.ascontiguousarray",
        "numpy.fromiter",
    }
)
"""Calls that build an integer table from Python values: data first, ``dtype=`` keyword."""

FILL_CONSTRUCTORS: Final = frozenset({"torch.full", "numpy.full"})
"""``full(shape, fill_value, dtype=...)``: the value is the second argument."""

STACKING_CONSTRUCTORS: Final = frozenset(
    {
        "numpy.stack",
        "numpy.column_stack",
        "numpy.row_stack",
        "numpy.vstack",
        "numpy.hstack",
        "numpy.concatenate",
        "torch.stack",
        "torch.cat",
        "torch.concat",
    }
)
"""Calls joining a sequence of arrays/lists into one table (numpy: float64 for mixed)."""

BUFFER_CONSTRUCTORS: Final = frozenset({"torch.frombuffer", "numpy.frombuffer"})
"""Views of a byte buffer: the buffer's element type decides the bits (``array('Q')``)."""

PY_ARRAY: Final = "array.array"
"""``array.array(typecode, values)``: ``"q"``/``"l"`` raise for >= 2**63, ``"Q"`` keeps bits."""

PY_ARRAY_SIGNED_CODES: Final = frozenset({"q", "l"})
PY_ARRAY_UNSIGNED_CODES: Final = frozenset({"Q", "L"})

OUT_UFUNCS: Final = frozenset(
    {"numpy.add", "numpy.subtract", "numpy.multiply", "numpy.bitwise_or", "numpy.copyto"}
)
"""numpy functions whose ``out=`` array receives the result (``np.add(b, a, out=t)``)."""

STORE_METHODS: Final = frozenset({"fill_", "fill", "__setitem__", "index_fill_", "copy_"})
"""Methods writing a value into an existing tensor/array."""

ALLOCATORS: Final = frozenset(
    {
        "torch.empty",
        "torch.zeros",
        "torch.ones",
        "torch.empty_like",
        "torch.zeros_like",
        "torch.ones_like",
        "torch.full_like",
        "torch.arange",
        "numpy.empty",
        "numpy.zeros",
        "numpy.ones",
        "numpy.empty_like",
        "numpy.zeros_like",
        "numpy.ones_like",
        "numpy.arange",
        "numpy.full_like",
    }
)
"""Calls that allocate an array without taking values (their dtype is what matters)."""

SAME_ARRAY_METHODS: Final = frozenset(
    {
        "cpu", "cuda", "to", "pin_memory", "contiguous", "clone", "copy", "flatten", "ravel",
        "reshape", "squeeze", "unsqueeze", "T", "detach", "share_memory_", "narrow", "expand",
        "repeat", "view_as", "__getitem__", "transpose", "permute",
    }
)
"""Methods returning an array of the same dtype and library as their receiver."""

MAPPING_CONSTRUCTORS: Final = frozenset(
    {"dict", "collections.defaultdict", "collections.OrderedDict", "collections.Counter"}
)
"""Containers where storing an address is harmless (dict stores)."""

# ---------------------------------------------------------------------------- dtypes

U64_DTYPES: Final = frozenset(
    {"torch.uint64", "numpy.uint64", "numpy.ulonglong", "numpy.uint", "numpy.uintp",
     "ctypes.c_uint64", "ctypes.c_ulonglong"}
)
I64_DTYPES: Final = frozenset(
    {"torch.int64", "torch.long", "numpy.int64", "numpy.longlong", "numpy.intp", "numpy.int_",
     "ctypes.c_int64", "ctypes.c_longlong", "builtins.int"}
)
U64_DTYPE_STRINGS: Final = frozenset({"uint64", "u8", "<u8", "=u8", "Q", "uint", "uintp"})
I64_DTYPE_STRINGS: Final = frozenset({"int64", "i8", "<i8", "=i8", "q", "int", "intp", "long"})

# ------------------------------------------------------------------------------ encoders

DEVPTR_CONSTRUCTORS: Final = frozenset(
    {"devptr.DevicePtr", "devptr.DevicePtr.of", "devptr.DevicePtr.from_signed",
     "devptr._ptr.DevicePtr", "devptr._ptr.DevicePtr.of", "devptr._ptr.DevicePtr.from_signed"}
)
"""Calls returning a checked :class:`devptr.DevicePtr`."""

DEVPTR_SINKS: Final = frozenset(
    {"devptr.store", "devptr.ptr_tensor", "devptr.addresses", "devptr._store.store",
     "devptr._store.ptr_tensor", "devptr._store.addresses"}
)
"""devptr functions that encode addresses bit-exactly (never a finding)."""

SIGNED_ENCODERS: Final = frozenset({"ctypes.c_int64", "ctypes.c_longlong"})
"""``ctypes.c_int64(p).value``: already the int64 two's-complement encoding of ``p``."""

DEVPTR_ENCODED_ATTRS: Final[Mapping[str, str]] = {"addr": "uint64", "signed": "int64"}
"""``DevicePtr.addr`` is the unsigned value, ``.signed`` the int64 encoding."""

# --------------------------------------------------------------- device code (skipped)

DEVICE_DECORATORS: Final = frozenset(
    {"triton.jit", "triton.autotune", "triton.heuristics", "cutlass.cute.kernel",
     "cutlass.cute.jit", "cute.kernel", "cute.jit", "triton.language.core.builtin"}
)
"""Decorators of device code (Triton, CuTe): function bodies the engine skips."""

# ------------------------------------------------------------------ mypy's full names

MYPY_FULLNAMES: Final[Mapping[str, str]] = {
    "torch._C._VariableFunctions.tensor": "torch.tensor",
    "torch._C._VariableFunctions.as_tensor": "torch.as_tensor",
    "torch._C._VariableFunctions.asarray": "torch.asarray",
    "torch._C._VariableFunctions.full": "torch.full",
    "torch._C._VariableFunctions.frombuffer": "torch.frombuffer",
    "numpy._core.multiarray.array": "numpy.array",
    "numpy._core.multiarray.asarray": "numpy.asarray",
    "numpy._core.multiarray.asanyarray": "numpy.asanyarray",
    "numpy._core.multiarray.ascontiguousarray": "numpy.ascontiguousarray",
    "numpy._core.multiarray.fromiter": "numpy.fromiter",
    "numpy._core.numeric.full": "numpy.full",
    "numpy.core.multiarray.array": "numpy.array",
    "numpy.core.multiarray.asarray": "numpy.asarray",
    "numpy.core.multiarray.fromiter": "numpy.fromiter",
    "numpy.core.numeric.full": "numpy.full",
    "numpy._core.shape_base.stack": "numpy.stack",
    "numpy.lib._shape_base_impl.column_stack": "numpy.column_stack",
    "numpy._core.multiarray.concatenate": "numpy.concatenate",
    "array.array": "array.array",
}
"""mypy's full name of a catalogued function (where the stubs define it) -> catalogue name."""

TABLE_SINKS: Final = (
    TABLE_CONSTRUCTORS | FILL_CONSTRUCTORS | STACKING_CONSTRUCTORS | BUFFER_CONSTRUCTORS
    | frozenset({PY_ARRAY})
)
"""Every call that builds a table from values."""


# ---------------------------------------------------------- derived: what the text holds
def _last(name: str) -> str:
    return name.rpartition(".")[2]


SOURCE_SPELLINGS: Final[frozenset[str]] = frozenset(
    {
        *ADDRESS_METHODS,
        *PEER_POINTER_ATTRS,
        *ADDRESS_FUNCTION_SUFFIXES,
        CUDA_ARRAY_INTERFACE,
        f"data.{CUPY_POINTER_ATTR}",
        *STRUCT_ENCODERS,
        *(
            _last(name)
            for name in (
                ADDRESS_FUNCTIONS | ADDRESS_PAIR_FUNCTIONS | HOST_ADDRESS_FUNCTIONS
                | SIGNED_ENCODERS | VOID_POINTER_TYPES
                | {n for n in U64_DTYPES | I64_DTYPES if n.startswith("ctypes.")}
            )
        ),
    }
)
"""Text a module must hold to contain one of this catalogue's address sources or encoders:
the last name of each (a call is spelled through some alias of its module, ``rt.malloc``
or ``cupy.cuda.runtime.malloc``, but with its own last name). Derived here so that the
engine's text filters (:func:`devptr.lint.engine.may_have_findings` and the per-function
triggers) cannot drift from the catalogue; ``tests/lint/test_catalogue_reach.py`` proves
every entry reaches a finding through ``devptr check``."""
