"""vLLM's EC (encoder cache) CPU connector, ported onto devptr.

Descriptor buffers for batched raw copies, their pool, ``swap_blocks_batch`` with a
registry of platform ops and a portable path, and a worker-level save/load flow.

- :class:`DescriptorBuffers` (``add_copies(first, sources, destinations, byte_counts)``)
  and :class:`DescriptorBufferPool` (``acquire(n)``, ``release(bufs)``, LIFO reuse,
  :class:`devptr.StaleBufferError` on use after release). Storage is uint64; each
  consumer gets the encoding it reads (:func:`devptr.encoding_for` its backend): int64
  src, dst and sizes for the CUDA/ROCm op, uint64 for XPU. No per-platform dtype here.
- :func:`swap_blocks_batch` dispatches to :func:`register_swap_op`'s op for the backend,
  else vLLM's op when vLLM is installed (looked up at the first call, never at import),
  else the portable path: on CUDA the SM kernel (``devptr.kernels.batch_memcpy``) or the
  copy engines (one ``cudaMemcpyBatchAsync``), chosen per batch from crossovers measured
  on the device (:func:`calibrate_engines`, :func:`last_engine_choice`); the SM kernel on
  other devices; ``ctypes.memmove`` on the CPU. A batch shape swapped again on the SM
  kernel replays its upload and launch as one CUDA graph (:func:`swap_graphs`).
- :class:`ECCPUWorker`: encoder outputs <-> a host block region, one batched copy per
  step and direction.

See ``docs/ec_connector.md``.
"""

from devptr.adapters.ec_connector._descriptors import DescriptorBufferPool, DescriptorBuffers
from devptr.adapters.ec_connector._engines import Crossovers, EngineChoice
from devptr.adapters.ec_connector._engines import calibrate as calibrate_engines
from devptr.adapters.ec_connector._engines import last_choice as last_engine_choice
from devptr.adapters.ec_connector._graphs import swap_graphs
from devptr.adapters.ec_connector._swap import (
    SwapOp,
    SwapPath,
    choose_path,
    register_swap_op,
    swap_blocks_batch,
    swap_op_for,
    unregister_swap_op,
)
from devptr.adapters.ec_connector._worker import ECCPUWorker, Transfer, TransfersDone, coalesce_runs

__all__ = [
    "Crossovers",
    "DescriptorBufferPool",
    "DescriptorBuffers",
    "ECCPUWorker",
    "EngineChoice",
    "SwapOp",
    "SwapPath",
    "Transfer",
    "TransfersDone",
    "calibrate_engines",
    "choose_path",
    "coalesce_runs",
    "last_engine_choice",
    "register_swap_op",
    "swap_blocks_batch",
    "swap_graphs",
    "swap_op_for",
    "unregister_swap_op",
]
