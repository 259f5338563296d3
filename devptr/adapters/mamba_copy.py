"""Mamba align-mode state copy (vLLM ``v1/worker/mamba_utils.py``) on devptr tables.

Same names and call shapes as vLLM: :class:`MambaCopyBuffers`, :func:`collect_mamba_copy_meta`,
:func:`do_mamba_copy_block` and :func:`batch_memcpy`. Differences:

- the segments live in one :class:`devptr.PtrTable` of
  :data:`devptr.kernels.SEGMENT_COLUMNS` (``src``, ``dst``: uint64 addresses, bit-exact
  for XPU addresses at or above 2**63; ``size``: int64 byte counts), one record per copy;
  ``src_ptrs``, ``dst_ptrs`` and ``sizes`` are read-only views of its columns
  (:class:`~devptr.adapters._columns.ColumnView`);
- ``collect_mamba_copy_meta`` computes a request's entries for every layer at once with
  uint64 arithmetic (``base + block * stride``) from each state tensor's geometry,
  measured into a :class:`CopyPlan`, instead of indexing tensors and writing one numpy
  scalar per entry; copy functions other than the two known ones are called as vLLM does;
- the plan holds weak references to the tensors it measured and is checked against them
  at the first collect of every step: re-allocated, freed or moved state tensors are
  re-measured, never read through stale addresses;
- the flush moves the table with one host-to-device copy (vLLM: three) and runs
  :func:`devptr.kernels.batch_memcpy_table` (memmove per segment, 16-byte accesses).

Config objects are replaced by plain values (see :mod:`devptr.adapters._mamba_layout`).
"""

from __future__ import annotations

import dataclasses
import operator
import weakref
from collections.abc import Callable, Mapping, Sequence
from itertools import chain
from typing import Final

import numpy as np
import numpy.typing as npt
import torch

from devptr import CapacityError, DevicePtr, PtrTable, PtrTypeError
from devptr.adapters._columns import ColumnView
from devptr.adapters._mamba_layout import (
    CONV,
    TEMPORAL,
    CopyFunc,
    MambaCopySpec,
    block_ids_of,
    copy_kind,
    funcs_for,
    geometry,
    get_conv_copy_spec,
    get_temporal_copy_spec,
    layer_states,
    walk,
)
from devptr.interop import from_int
from devptr.kernels import SEGMENT_COLUMNS, batch_memcpy, batch_memcpy_table

U64 = np.uint64

_DATA_PTR: Final[Callable[[object], int]] = torch.Tensor.data_ptr  # type: ignore[assignment]
"""``data_ptr`` as a function (mapped over a list of states without an attribute lookup each;
a non-tensor raises TypeError)."""

def _call(ref: Callable[[], object]) -> object:
    return ref()


_CALL: Final[Callable[[Callable[[], object]], object]] = getattr(operator, "call", _call)
"""Calls a weak reference (Python 3.11+: ``operator.call``, mapped over the plan's
references without a Python frame each)."""

UNBOUNDED: Final = 1 << 62
"""Limit of a table column that no known state reads (any block id or bias passes)."""


@dataclasses.dataclass(frozen=True)
class _Layer:
    """Where a layer's plan entries came from, to check the plan is still current."""

    name: str
    funcs: tuple[object, ...]
    states: tuple[tuple[Callable[[], object], int], ...]
    """Per copied state: a weak reference to the tensor (strong for objects without weak
    references) and the address it had."""


@dataclasses.dataclass(frozen=True)
class _Generic:
    """An entry whose copy function the adapter does not know: called per entry."""

    entry: int
    group_pos: int
    layer: str
    index: int
    func: CopyFunc


def _spec_start(spec: object) -> DevicePtr:
    if isinstance(spec, MambaCopySpec):
        return spec.start
    raw = getattr(spec, "start_addr", None)  # vLLM's MambaCopySpec: an int from data_ptr()
    if type(raw) is int:
        return from_int(raw)
    raise PtrTypeError(f"a copy function returned {spec!r}: expected a MambaCopySpec")


def _ref(state: object) -> Callable[[], object]:
    try:
        return weakref.ref(state)
    except TypeError:
        return lambda: state


@dataclasses.dataclass(frozen=True, eq=False)
class CopyPlan:
    """Per-entry geometry of one request's copies, as arrays, measured from the state tensors.

    Built by :meth:`MambaCopyBuffers.plan_for`; it holds weak references to the tensors
    it measured (not the tensors) and is rebuilt when any of them was replaced, freed or
    moved (checked at the first collect of every step, see :meth:`current`).
    """

    mamba_group_ids: tuple[int, ...]
    layers: tuple[_Layer, ...]
    generic: tuple[_Generic, ...]
    base: npt.NDArray[np.uint64]
    """Base address of each entry's state tensor."""
    stride: npt.NDArray[np.uint64]
    """Bytes between blocks of each entry's state."""
    src_sel: npt.NDArray[np.intp]
    """Which of a request's ``2 * groups`` block ids is each entry's source (conv windows
    read column ``src``, temporal states column ``src + bias``)."""
    group: npt.NDArray[np.intp]
    """Each entry's group position (selects its destination block id)."""
    conv_shift: npt.NDArray[np.uint64]
    """Bytes a conv window's source moves per accepted token (0 for whole blocks)."""
    conv_tok: npt.NDArray[np.int64]
    """Bytes a conv window's copy shrinks per accepted token (0 for whole blocks)."""
    size0: npt.NDArray[np.int64]
    """Bytes copied with no accepted-token bias."""
    min_width: int
    """Narrowest conv window among known states (:data:`UNBOUNDED` if none)."""
    limit: tuple[int, ...]
    """Fewest blocks among known states reading each (group, column kind)."""
    dst_limit: tuple[int, ...]
    """Fewest blocks among known states of each group."""

    def __post_init__(self) -> None:
        # the staleness check's flat lists, in layer order (one per copied state)
        object.__setattr__(self, "_refs", [ref for layer in self.layers for ref, _ in layer.states])
        object.__setattr__(self, "_addrs", [addr for layer in self.layers for _, addr in layer.states])
        object.__setattr__(self, "_names", [layer.name for layer in self.layers])
        object.__setattr__(self, "_funcs", [layer.funcs for layer in self.layers])
        object.__setattr__(self, "_counts", [len(layer.states) for layer in self.layers])
        object.__setattr__(self, "_list_types", [list] * len(self.layers))
        # compute()'s one gather: block ids [2 per group (src columns)..., 1 per group (dst)]
        sel2 = np.concatenate([self.src_sel, self.group + 2 * len(self.mamba_group_ids)])
        object.__setattr__(self, "_sel2", sel2)
        object.__setattr__(self, "_base2", np.concatenate([self.base, self.base]))
        object.__setattr__(self, "_stride2", np.concatenate([self.stride, self.stride]))

    _refs: list[Callable[[], object]] = dataclasses.field(init=False, repr=False, compare=False)
    _addrs: list[int] = dataclasses.field(init=False, repr=False, compare=False)
    _names: list[str] = dataclasses.field(init=False, repr=False, compare=False)
    _funcs: list[tuple[object, ...]] = dataclasses.field(init=False, repr=False, compare=False)
    _counts: list[int] = dataclasses.field(init=False, repr=False, compare=False)
    _list_types: list[type] = dataclasses.field(init=False, repr=False, compare=False)
    _sel2: npt.NDArray[np.intp] = dataclasses.field(init=False, repr=False, compare=False)
    _base2: npt.NDArray[np.uint64] = dataclasses.field(init=False, repr=False, compare=False)
    _stride2: npt.NDArray[np.uint64] = dataclasses.field(init=False, repr=False, compare=False)

    @property
    def entries(self) -> int:
        """Copies per request."""
        return int(self.base.shape[0])

    @classmethod
    def build(
        cls,
        kv_cache_groups: Sequence[Sequence[str]],
        copy_funcs: object,
        mamba_group_ids: Sequence[int],
        forward_context: Mapping[str, object],
    ) -> CopyPlan:
        """Measure every state tensor of ``mamba_group_ids`` in ``forward_context``."""
        layers: dict[str, tuple[tuple[object, ...], list[tuple[Callable[[], object], int]]]] = {}
        generic: list[_Generic] = []
        base: list[int] = []
        stride: list[int] = []
        tok_stride: list[int] = []
        tok_bytes: list[int] = []
        width: list[int] = []
        block_bytes: list[int] = []
        is_conv: list[bool] = []
        group: list[int] = []
        blocks: list[int] = []
        for k, (pos, _gid, layer, s_idx, func) in enumerate(
            walk(kv_cache_groups, mamba_group_ids, copy_funcs)
        ):
            state = layer_states(forward_context, layer)[s_idx]
            if layer not in layers:
                layers[layer] = (tuple(funcs_for(copy_funcs, layer)), [])
            layers[layer][1].append((_ref(state), int(state.data_ptr())))
            group.append(pos)
            kind = copy_kind(func)
            if kind is None:
                generic.append(_Generic(k, pos, layer, s_idx, func))
                for col in (base, stride, tok_stride, tok_bytes, width, block_bytes, blocks):
                    col.append(0)
                is_conv.append(False)
                continue
            g = geometry(state)
            base.append(g.base.addr)
            stride.append(g.block_stride)
            tok_stride.append(g.token_stride)
            tok_bytes.append(g.token_bytes)
            width.append(g.width)
            block_bytes.append(g.block_bytes)
            is_conv.append(kind == CONV)
            blocks.append(g.num_blocks)
        conv = np.array(is_conv, dtype=bool)
        grp = np.array(group, dtype=np.intp)
        known = np.ones(len(group), dtype=bool)
        known[[x.entry for x in generic]] = False
        u64 = np.array(tok_bytes, dtype=U64)
        wid = np.array(width, dtype=U64)
        src_sel = grp * 2 + (~conv).astype(np.intp)
        conv_widths = wid[conv & known]
        limit = [UNBOUNDED] * (2 * len(mamba_group_ids))
        dst_limit = [UNBOUNDED] * len(mamba_group_ids)
        for k in np.flatnonzero(known).tolist():
            sel, pos = int(src_sel[k]), group[k]
            limit[sel] = min(limit[sel], blocks[k])
            dst_limit[pos] = min(dst_limit[pos], blocks[k])
        return cls(
            mamba_group_ids=tuple(mamba_group_ids),
            layers=tuple(_Layer(name, f, tuple(st)) for name, (f, st) in layers.items()),
            generic=tuple(generic),
            base=np.array(base, dtype=U64),
            stride=np.array(stride, dtype=U64),
            src_sel=src_sel,
            group=grp,
            conv_shift=np.where(conv, np.array(tok_stride, dtype=U64), U64(0)),
            conv_tok=np.where(conv, u64, U64(0)).astype(np.int64),
            size0=np.where(conv, wid * u64, np.array(block_bytes, dtype=U64)).astype(np.int64),
            min_width=int(conv_widths.min()) if conv_widths.size else UNBOUNDED,
            limit=tuple(limit),
            dst_limit=tuple(dst_limit),
        )

    def current(
        self,
        kv_cache_groups: Sequence[Sequence[str]],
        copy_funcs: object,
        mamba_group_ids: Sequence[int],
        forward_context: Mapping[str, object],
    ) -> bool:
        """Whether the plan still describes these layers: same layers and copy functions,
        and every state the very tensor it measured, alive, at the same address."""
        if tuple(mamba_group_ids) != self.mamba_group_ids:
            return False
        names = [layer for gid in mamba_group_ids for layer in kv_cache_groups[gid]]
        if names != self._names:  # one C-level comparison of the layer names
            return False
        if type(copy_funcs) is dict:  # the common case, without the ABC checks
            funcs = list(map(copy_funcs.get, names))
        else:
            try:
                funcs = [funcs_for(copy_funcs, name) for name in names]
            except (KeyError, TypeError):  # build() says what is wrong
                return False
        if funcs != self._funcs:  # a list, or another sequence, of the same functions passes
            for f, known in zip(funcs, self._funcs, strict=True):
                if f != known and (type(f) is tuple or f is None or tuple(f) != known):
                    return False
        try:
            entries = list(map(forward_context.get, names))
            if list(map(type, entries)) == self._list_types and (
                list(map(len, entries)) == self._counts  # type: ignore[arg-type]
            ):
                # the common case (each layer's states a list of exactly the measured count):
                # flattened in C, no Python step per layer
                flat: list[object] = list(chain.from_iterable(entries))  # type: ignore[arg-type]
            else:
                flat = []
                for entry, k in zip(entries, self._counts, strict=True):
                    states = entry if type(entry) is list else getattr(entry, "kv_cache", entry)
                    n = len(states)  # type: ignore[arg-type]
                    if n < k:
                        return False
                    flat += states if n == k else states[:k]  # type: ignore[index,arg-type]
            # every state the very tensor measured (alive), then at the same address
            if not all(map(operator.is_, flat, map(_CALL, self._refs))):
                return False
            return list(map(_DATA_PTR, flat)) == self._addrs
        except (TypeError, AttributeError):  # not sequences of tensors: build() says what is wrong
            return False

    def compute(
        self,
        block_ids: Sequence[Sequence[int]],
        src: int,
        dest: int,
        bias: int,
        forward_context: Mapping[str, object],
    ) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64], npt.NDArray[np.int64]]:
        """One request's ``(src addresses, dst addresses, byte counts)``, validated."""
        cols: list[int] = []
        dsts: list[int] = []
        for pos, gid in enumerate(self.mamba_group_ids):
            ids = block_ids[gid]
            if not (0 <= src < len(ids) and 0 <= dest < len(ids)):  # a -1 is a bug, not "last"
                raise CapacityError(
                    f"group {gid}: block index src {src} or dest {dest} outside its "
                    f"{len(ids)} block ids"
                )
            col = (ids[src], ids[src + bias] if src + bias < len(ids) else -1)
            for j in (0, 1):
                lim = self.limit[2 * pos + j]
                if not 0 <= col[j] < lim:
                    if lim == UNBOUNDED and col[j] == -1:
                        continue  # no state of this group reads that column
                    raise CapacityError(
                        f"group {gid}: block id {col[j]} outside the {lim} blocks of its states"
                    )
            cols += col
            d = ids[dest]
            if not 0 <= d < self.dst_limit[pos]:
                raise CapacityError(f"group {gid}: block id {d} outside its states' blocks")
            dsts.append(d)
        if bias < 0 or (bias > self.min_width and self.min_width != UNBOUNDED):
            raise CapacityError(f"accept_token_bias {bias} outside [0, {self.min_width}]")
        # -1 (a column no state reads) wraps to 2**64 - 1 here, and no entry selects it;
        # sources and destinations in one pass: [src blocks..., dst blocks...] of the entries
        blk = np.array(cols + dsts, dtype=np.int64).view(U64)[self._sel2]
        both = self._base2 + blk * self._stride2
        n = self.base.shape[0]
        src_addr, dst_addr = both[:n], both[n:]
        if bias:
            src_addr += U64(bias) * self.conv_shift
            sizes = self.size0 - np.int64(bias) * self.conv_tok
        else:
            sizes = self.size0.copy()
        for g in self.generic:
            ids = block_ids[self.mamba_group_ids[g.group_pos]]
            state = layer_states(forward_context, g.layer)[g.index]
            spec = g.func(state, ids, src, bias + 1)
            src_addr[g.entry] = _spec_start(spec).addr
            dst_addr[g.entry] = DevicePtr.of(state[ids[dest]]).addr  # type: ignore[index]
            sizes[g.entry] = int(spec.num_elements) * int(state.element_size())
        return src_addr, dst_addr, sizes


class MambaCopyBuffers:
    """Host/device tables for the align-mode state copies of up to ``max_num_reqs`` requests.

    Attributes
    ----------
    table
        :class:`devptr.PtrTable` of :data:`devptr.kernels.SEGMENT_COLUMNS` with
        ``max_num_reqs * entries_per_req`` records (host uint64, pinned when possible,
        plus a device mirror): the buffers own this memory; collecting writes it, the
        flush uploads it in one copy.
    src_ptrs, dst_ptrs, sizes
        Read-only :class:`~devptr.adapters._columns.ColumnView` of the table's ``src``,
        ``dst`` and ``size`` columns (vLLM's names; zero-copy, strided; their
        ``to_device(n)`` uploads the table's first ``n`` records).
    offset
        Entries collected since the last reset (vLLM sets it to 0 each step).
    """

    def __init__(self, table: PtrTable, mamba_group_ids: list[int], entries_per_req: int) -> None:
        self.table = table
        self.src_ptrs = ColumnView(table, "src")
        self.dst_ptrs = ColumnView(table, "dst")
        self.sizes = ColumnView(table, "size")
        self.mamba_group_ids = mamba_group_ids
        self.entries_per_req = entries_per_req
        self.offset = 0
        self._plan: CopyPlan | None = None
        self._step_context: Mapping[str, object] | None = None
        self._cols = tuple(table.column_index(c) for c, _ in SEGMENT_COLUMNS)

    def write(
        self,
        first: int,
        src: npt.NDArray[np.uint64],
        dst: npt.NDArray[np.uint64],
        sizes: npt.NDArray[np.int64],
    ) -> None:
        """Store records ``first ..`` of values :meth:`CopyPlan.compute` made and checked:
        three column writes into the table's host memory, after any upload still reading it
        (the table's own ``fill`` would re-check every value and build each column again)."""
        st = self.table._live()  # raises once the table was released
        st.wait_host()
        rows = st.np[first : first + src.shape[0]]
        c_src, c_dst, c_size = self._cols
        rows[:, c_src] = src
        rows[:, c_dst] = dst
        rows[:, c_size] = sizes.view(U64)

    @classmethod
    def create(
        cls,
        max_num_reqs: int,
        kv_cache_groups: Sequence[Sequence[str]],
        copy_funcs: object,
        mamba_group_ids: Sequence[int] | None = None,
        *,
        device: str | torch.device | None = None,
        pin_memory: bool | None = None,
    ) -> MambaCopyBuffers:
        """Allocate tables for ``max_num_reqs`` requests.

        ``kv_cache_groups[gid]``: layer names of group ``gid``; ``copy_funcs``: layer name
        -> copy functions; ``mamba_group_ids``: the Mamba groups (default: all);
        ``device``: where the device mirrors live (None: host-only, for CPU runs).
        """
        gids = list(range(len(kv_cache_groups))) if mamba_group_ids is None else list(mamba_group_ids)
        per_req = sum(len(funcs_for(copy_funcs, layer)) for gid in gids for layer in kv_cache_groups[gid])
        n = max_num_reqs * per_req
        return cls(PtrTable(n, SEGMENT_COLUMNS, device=device, pin_memory=pin_memory), gids, per_req)

    def plan_for(
        self,
        kv_cache_groups: Sequence[Sequence[str]],
        copy_funcs: object,
        mamba_group_ids: Sequence[int],
        forward_context: Mapping[str, object],
    ) -> CopyPlan:
        """The copy plan for these layers, rebuilt when a state tensor changed.

        The plan is checked against the state tensors (:meth:`CopyPlan.current`) at the
        first collect of a step (``offset == 0``; vLLM resets it every step) and whenever
        another ``forward_context`` object is passed; between those, within one step, it
        is reused. During a step the buffers hold a reference to that step's
        ``forward_context`` (dropped by :func:`do_mamba_copy_block` and
        :meth:`reset_plan`), so its identity cannot be recycled.
        """
        plan = self._plan
        if plan is not None and self.offset > 0 and forward_context is self._step_context:
            return plan
        if plan is None or not plan.current(kv_cache_groups, copy_funcs, mamba_group_ids, forward_context):
            plan = CopyPlan.build(kv_cache_groups, copy_funcs, mamba_group_ids, forward_context)
            self._plan = plan
        self._step_context = forward_context
        return plan

    def end_step(self) -> None:
        """Drop the reference to this step's ``forward_context`` (the plan stays)."""
        self._step_context = None

    def reset_plan(self) -> None:
        """Forget the measured state geometry (it is re-measured at the next collect).

        Not needed after re-allocating state tensors: the plan notices (see
        :meth:`plan_for`). Kept for vLLM-style callers.
        """
        self._plan = None
        self._step_context = None


def collect_mamba_copy_meta(
    copy_bufs: MambaCopyBuffers,
    kv_cache_groups: Sequence[Sequence[str]],
    mamba_state_copy_funcs: object,
    mamba_group_ids: Sequence[int],
    src_block_idx: int,
    dest_block_idx: int,
    accept_token_bias: int,
    req_state: object,
    forward_context: Mapping[str, object],
) -> None:
    """Append one request's copies (every layer, every state) at ``copy_bufs.offset``.

    For conv window states the source is ``state[block_ids[src_block_idx], bias:]``; for
    temporal states ``state[block_ids[src_block_idx + bias]]``; the destination is
    ``state[block_ids[dest_block_idx]]`` (``bias = accept_token_bias``). Nothing is
    copied between devices; entries are written to the host tables only, validated whole
    first (a failing call writes nothing and leaves ``offset`` unchanged).
    """
    if src_block_idx == dest_block_idx and accept_token_bias == 0:
        return
    plan = copy_bufs.plan_for(kv_cache_groups, mamba_state_copy_funcs, mamba_group_ids, forward_context)
    src, dst, sizes = plan.compute(
        block_ids_of(req_state), src_block_idx, dest_block_idx, accept_token_bias, forward_context
    )
    off = copy_bufs.offset
    end = off + plan.entries
    if end > copy_bufs.table.capacity:
        raise CapacityError(
            f"{plan.entries} entries at offset {off} exceed capacity {copy_bufs.table.capacity}"
        )
    copy_bufs.write(off, src, dst, sizes)
    copy_bufs.offset = end


def do_mamba_copy_block(copy_bufs: MambaCopyBuffers) -> None:
    """Run the collected copies: one host-to-device copy of the table, one kernel launch."""
    n = copy_bufs.offset
    copy_bufs.end_step()
    if n == 0:
        return
    table = copy_bufs.table
    if table.device_type is not None:
        table.to_device(n)
    batch_memcpy_table(table, n)


__all__ = [
    "TEMPORAL",
    "UNBOUNDED",
    "ColumnView",
    "CopyPlan",
    "MambaCopyBuffers",
    "MambaCopySpec",
    "batch_memcpy",
    "collect_mamba_copy_meta",
    "do_mamba_copy_block",
    "get_conv_copy_spec",
    "get_temporal_copy_spec",
]
