"""The kernel path's upload and launch, replayed as one CUDA graph.

A swap on the SM kernel is two stream operations, the descriptor upload (pinned host ->
the device mirror) and the ``batch_memcpy`` launch, and about 30 us of host work to issue
them on the H200's host; a batch of small blocks is host-bound by it, and more so when
the host has just run other code (``benchmarks/profile_ec_order.py``). Both operations
read and write only the descriptor storage's own memory, whose addresses never change,
so once a batch shape has been seen they are captured into a graph and every later swap
of that shape is one ``cudaGraphLaunch``. The graph reads the host descriptors when it
runs, so new descriptors need no new graph.

- Key: the table's capacity (the column offsets), ``n`` and the largest byte count (the
  grid and the kernel's knobs). A shape is captured at its second swap, so a batch shape
  seen once never pays a capture (not timed here; more than a launch); at most
  :data:`PER_STORAGE` shapes are kept per storage (least recently used dropped), in the storage's
  ``derived`` slot: they live as long as the memory they hold, across pool hand-overs.
- Taken only on CUDA, outside a capture of the caller's (a swap inside the caller's own
  graph capture launches normally and becomes part of that graph), and not in checked
  mode (:func:`devptr.checked`: its per-launch checks run on the normal path). A capture
  that fails marks the shape as not capturable and the swap launches normally.
- :func:`swap_graphs` switches the path off (or on) for the process.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Protocol, TypeAlias

import torch

from devptr import PtrTypeError
from devptr._core_api import Storage, describe
from devptr._core_api import checked_registry as _checked
from devptr.adapters.ec_connector import _engines
from devptr.adapters.ec_connector._engines import table_copy

PER_STORAGE = 4
"""Batch shapes whose graphs one descriptor storage keeps."""

_SLOT = "ec_swap_graphs"
_SEEN = 1  # a shape swapped once, not captured yet
_FAILED = 0  # a shape whose capture failed: always the normal launch



class Kernelled(Protocol):
    """What the graph path reads of a descriptor table (``DescriptorBuffers``)."""

    @property
    def capacity(self) -> int: ...
    def _live(self) -> Storage: ...
    def _device_columns(self, n: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]: ...


class _State:
    enabled = True


_local = threading.local()


def _capture_stream(device: torch.device) -> torch.cuda.Stream:
    """This thread's stream for captures on ``device``: a capture joins whatever else is
    issued to its stream meanwhile, so it must be a stream no other thread (nor the copy
    engines' side streams) uses."""
    streams: dict[int, torch.cuda.Stream] | None = getattr(_local, "streams", None)
    if streams is None:
        streams = _local.streams = {}
    index = _engines._index(device)
    side = streams.get(index)
    if side is None:
        side = streams[index] = _engines._cuda.Stream(torch.device("cuda", index))
    return side


def swap_graphs(enabled: bool | None = None) -> bool:
    """Whether kernel-path swaps replay captured graphs (default: yes); ``enabled`` sets
    it for the process. Returns the setting in force after the call."""
    if enabled is not None:
        if type(enabled) is not bool:
            raise PtrTypeError(f"enabled must be a bool or None (got {describe(enabled)})")
        _State.enabled = enabled
    return _State.enabled


def launch(bufs: Kernelled, n: int, top: int, cuda: bool) -> None:
    """Swap the first ``n`` descriptors of ``bufs`` on the SM kernel: upload and launch
    on the current stream, or replay their graph."""
    if (
        not (cuda and _State.enabled)
        or (_checked.ENABLED and _checked.is_enabled())
        or torch.cuda.is_current_stream_capturing()
    ):
        _plain(bufs, n, top)
        return
    st = bufs._live()
    graphs = st.derived.get(_SLOT)
    if graphs is None:
        graphs = st.derived[_SLOT] = OrderedDict()
    assert isinstance(graphs, OrderedDict)
    key = (bufs.capacity, n, top)
    hit: Entry | None = graphs.get(key)
    if isinstance(hit, Captured):
        graphs.move_to_end(key)
        hit.replay(st)
        return
    if hit == _FAILED:
        _plain(bufs, n, top)
        return
    if hit is None:  # first sight: launch, remember the shape
        _plain(bufs, n, top)
        _put(graphs, key, _SEEN)
        return
    captured = _capture(bufs, st, n, top)
    _put(graphs, key, _FAILED if captured is None else captured)
    if captured is None:
        _plain(bufs, n, top)
        return
    captured.replay(st)


class Captured:
    """One batch shape's graph and the event its upload records (an event-record node
    right after the upload, so the next host write waits for the upload only, as after a
    normal one, not for the copies)."""

    __slots__ = ("graph", "uploaded")

    def __init__(self, graph: torch.cuda.CUDAGraph, uploaded: torch.Event) -> None:
        self.graph = graph
        self.uploaded = uploaded

    def replay(self, st: Storage) -> None:
        self.graph.replay()
        st.note_async_read(self.uploaded)


Entry: TypeAlias = "Captured | int"
"""What a storage keeps per batch shape: its graph, or _SEEN / _FAILED."""


def _plain(bufs: Kernelled, n: int, top: int, uploaded: torch.Event | None = None) -> None:
    ds, dd, dk = bufs._device_columns(n)
    if uploaded is not None:
        uploaded.record()
    table_copy(ds, dd, dk, n, top)


def _put(graphs: OrderedDict[tuple[int, int, int], Entry], key: tuple[int, int, int], entry: Entry) -> None:
    graphs[key] = entry
    graphs.move_to_end(key)
    while len(graphs) > 2 * PER_STORAGE:  # graphs and seen-once shapes together
        graphs.popitem(last=False)
    held = [k for k, v in graphs.items() if isinstance(v, Captured)]
    for k in held[: max(0, len(held) - PER_STORAGE)]:
        del graphs[k]


def _capture(bufs: Kernelled, st: Storage, n: int, top: int) -> Captured | None:
    """The graph of ``n`` copies' upload and launch, captured on this thread's capture
    stream (nothing runs: the caller replays it), or None when this runtime refuses the
    capture."""
    side = _capture_stream(torch.cuda.current_stream().device)
    graph = torch.cuda.CUDAGraph()
    try:  # captured as a node that records the event at each replay
        uploaded = _engines._cuda.Event(external=True)
    except TypeError:  # a torch without external events (before 2.5): no graphs
        return None
    side.wait_stream(torch.cuda.current_stream())
    try:
        with torch.cuda.stream(side), st.untracked():
            graph.capture_begin(capture_error_mode="thread_local")
            try:
                _plain(bufs, n, top, uploaded)
            finally:
                graph.capture_end()
    except RuntimeError:
        return None
    torch.cuda.current_stream().wait_stream(side)
    return Captured(graph, uploaded)
