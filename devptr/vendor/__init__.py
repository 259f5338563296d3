"""Vendorable subsets of devptr: single modules that depend only on torch and numpy.

- :mod:`devptr.vendor.ptrtable`: DevicePtr, Encoding, PtrBuffer, store, ptr_tensor,
  addresses in one file, to copy into an engine (e.g. ``vllm/utils/ptrtable.py``).
"""
