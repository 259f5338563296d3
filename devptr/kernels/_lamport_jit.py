# Triton kernels: parameters carry no Python annotations (Triton reads annotations as
# specialisation hints), so mypy cannot type these bodies.
# mypy: disable-error-code="no-untyped-def,untyped-decorator"
"""Triton device code of the one-shot Lamport all-reduce.

Imported only through :func:`devptr.kernels._runtime.jit_module` (it imports Triton).

Data travels as 32-bit words: float32 values as their bits, float16/bfloat16 values as
packed pairs. The empty-slot word ``EMPTY`` (float32 -0.0, declared in
:mod:`devptr.kernels._lamport_layout` and passed in as a constexpr, like every table
position, flag word and the round count: this module holds no copy of the layout); a writer first turns
every negative zero of its input into +0.0 (per 16-bit half for the 16-bit types), so no
word it writes can be the empty-slot word, and a reader knows a word has arrived when it
is no longer that word. Words are written and read whole (aligned 32-bit accesses), so a
half-arrived pair is never mistaken for an arrived one.
"""

from __future__ import annotations

import triton
import triton.language as tl

# Facts of the float formats (not of the table layout).
HI_MASK = tl.constexpr(-65536)  # 0xFFFF0000 as int32
LO_MASK = tl.constexpr(0xFFFF)
NEG_ZERO_16 = tl.constexpr(0x8000)
NEG_ZERO_16_HI = tl.constexpr(-2147483648)  # 0x8000 in the high half, as int32
NEG_ZERO_32 = tl.constexpr(-2147483648)  # float32 -0.0 as int32
NAN_32 = tl.constexpr(0x7FC00000)  # float32 quiet NaN
NAN_16_PAIR = tl.constexpr(0x7E007E00)  # two float16 quiet NaNs
NAN_BF16_PAIR = tl.constexpr(0x7FC07FC0)  # two bfloat16 quiet NaNs


@triton.jit
def _sanitize(w, KIND: tl.constexpr):
    """Input words with every negative zero made +0.0 (KIND 0: float32, else 16-bit pairs).

    With the empty-slot word being float32 -0.0 (the layout's declaration), no sanitised
    word equals it.
    """
    if KIND == 0:
        w = tl.where(w == NEG_ZERO_32, 0, w)
    else:
        w = tl.where((w & LO_MASK) == NEG_ZERO_16, w & HI_MASK, w)
        w = tl.where((w & HI_MASK) == NEG_ZERO_16_HI, w & LO_MASK, w)
    return w


@triton.jit
def _decode(w, KIND: tl.constexpr):
    """Words to float32 values: (value, unused) for float32, (low half, high half) else."""
    if KIND == 0:
        lo = w.to(tl.float32, bitcast=True)
        hi = lo
    elif KIND == 1:
        lo = (w & LO_MASK).to(tl.int16).to(tl.float16, bitcast=True).to(tl.float32)
        hi = (w >> 16).to(tl.int16).to(tl.float16, bitcast=True).to(tl.float32)
    else:
        lo = (w << 16).to(tl.float32, bitcast=True)
        hi = (w & HI_MASK).to(tl.float32, bitcast=True)
    return lo, hi


@triton.jit
def _encode(lo, hi, KIND: tl.constexpr):
    """float32 sums back to output words (rounded to the 16-bit type, nearest-even)."""
    if KIND == 0:
        w = lo.to(tl.int32, bitcast=True)
    else:
        if KIND == 1:
            lo16 = lo.to(tl.float16).to(tl.int16, bitcast=True)
            hi16 = hi.to(tl.float16).to(tl.int16, bitcast=True)
            w = (lo16.to(tl.int32) & LO_MASK) | (hi16.to(tl.int32) << 16)
        else:
            w = (_bf16_bits(lo) & LO_MASK) | (_bf16_bits(hi) << 16)
    return w


@triton.jit
def _bf16_bits(v):
    """float32 to bfloat16 bits (in an int32), rounded to nearest-even; NaN stays NaN.

    Done on the bits so that compiled kernels and the interpreter (which truncates) agree.
    """
    bits = v.to(tl.int32, bitcast=True)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    nan = (bits & 0x7FFFFFFF) > 0x7F800000
    return tl.where(nan, (bits >> 16) | 0x40, rounded)


@triton.jit
def _nan_word(KIND: tl.constexpr):
    """The output word of an element that is not a sum (NaN in the dtype)."""
    if KIND == 0:
        w = NAN_32
    elif KIND == 1:
        w = NAN_16_PAIR
    else:
        w = NAN_BF16_PAIR
    return w


@triton.jit
def _table_ptr(ws_ptr, k, T: tl.constexpr):
    """Entry ``k`` of the workspace table (int64 or uint64) as a pointer to ``T``."""
    return tl.load(ws_ptr + k).to(tl.uint64, bitcast=True).to(tl.pointer_type(T))


@triton.jit
def _lamport_allreduce_kernel(
    ws_ptr,
    x_ptr,
    out_ptr,
    rank,
    n_words,
    comm_words,
    slot_words,
    max_spins,
    WORLD: tl.constexpr,
    LAMPORT_AT: tl.constexpr,
    FLAG_AT: tl.constexpr,
    LAYOUT_AT: tl.constexpr,
    F_ARRIVED: tl.constexpr,
    F_TIMEOUT: tl.constexpr,
    F_ROUND: tl.constexpr,
    L_CLEAR: tl.constexpr,
    ROUNDS: tl.constexpr,
    SLOT_ALIGN: tl.constexpr,
    EMPTY: tl.constexpr,
    POISON: tl.constexpr,
    KIND: tl.constexpr,
    WRITE: tl.constexpr,
    REDUCE: tl.constexpr,
    BLOCK: tl.constexpr,
):
    """One round of the one-shot Lamport all-reduce, for one rank.

    ``ws_ptr``: the workspace table; the layout constexprs (``LamportLayout.kernel_constants``)
    say where rank r's Lamport buffer (``LAMPORT_AT + r``), the flag buffer (``FLAG_AT``) and
    the layout buffer (``LAYOUT_AT``) are, which flag words count arrivals (``F_ARRIVED``),
    record a timeout (``F_TIMEOUT``) and hold the round buffer index (``F_ROUND``), which
    layout word holds the previous round's size (``L_CLEAR``), the round count
    (``ROUNDS``), the slot alignment in bytes and the empty-slot word.
    ``x_ptr``/``out_ptr``: float32/float16/bfloat16 data read and written as ``n_words``
    int32 words. Rank r's slot in round buffer b of every Lamport buffer starts at word
    ``b * comm_words + r * slot_words``.

    WRITE: put this rank's words into its slot of round buffer b of every rank (peers first).
    REDUCE: for each word, wait (volatile loads, at most ``max_spins`` re-reads per
    program, shared by its chunks and slots) until every slot of this rank's round buffer b
    holds data, sum the slots in rank order in float32, write ``out``; refill with the
    empty word the previous round's buffer (``L_CLEAR`` bytes per slot); the last program
    to arrive records this round's size and advances the round index.

    Faults: a chunk whose wait ran out is written as NaN (never a partial sum), the
    timeout flag is set, and the poison word of every rank's Lamport buffer (after the
    round buffers: word ``ROUNDS * comm_words``) is set to ``POISON``. A rank that finds
    its own poison word set does nothing but set its timeout flag and write NaN: after one
    timeout every later call on every rank fails until the workspace is rebuilt (and the
    host's ``check()`` reads the poison word too). The poison word is read once, at the
    start, beside the round index (the two loads overlap: no added latency on the way).
    """
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    offs = tl.arange(0, BLOCK).to(tl.int64)
    xw = x_ptr.to(tl.pointer_type(tl.int32), bitcast=True)
    ow = out_ptr.to(tl.pointer_type(tl.int32), bitcast=True)
    flag = _table_ptr(ws_ptr, FLAG_AT, tl.int32)
    lay = _table_ptr(ws_ptr, LAYOUT_AT, tl.int64)
    own = _table_ptr(ws_ptr, LAMPORT_AT + rank, tl.int32)
    status = ROUNDS * comm_words  # the poison word, after the round buffers
    b = tl.load(flag + F_ROUND).to(tl.int64)
    nchunks = tl.cdiv(n_words, BLOCK)
    ALIGN_WORDS: tl.constexpr = SLOT_ALIGN // 4
    poisoned = tl.load(own + status, volatile=True) == POISON
    if poisoned:
        # A timeout somewhere: compute nothing, wait for nobody; say so and write NaN.
        tl.store(flag + F_TIMEOUT, 1)
        if REDUCE:  # (names of its own: a name both branches bind must have one type)
            for cz in range(pid, nchunks, nprog):
                iz = offs + cz * BLOCK
                tl.store(ow + iz, tl.full([BLOCK], _nan_word(KIND), tl.int32), mask=iz < n_words)
    else:
        # Every slot starts on a SLOT_ALIGN boundary (Lamport buffers are allocated aligned,
        # comm_size and slot sizes are multiples of it): the hints, on word offsets and base
        # pointers, let Triton use wide accesses.
        if WRITE:
            mine = b * comm_words + rank * slot_words
            for c in range(pid, nchunks, nprog):
                idx = offs + c * BLOCK
                m = idx < n_words
                w = _sanitize(tl.load(xw + idx, mask=m, other=0), KIND)
                for p in tl.static_range(1, WORLD + 1):
                    dst = _table_ptr(ws_ptr, LAMPORT_AT + (rank + p) % WORLD, tl.int32)
                    tl.store(tl.multiple_of(dst + mine, SLOT_ALIGN) + idx, w, mask=m)
        if REDUCE:
            cur = tl.multiple_of(own + b * comm_words, SLOT_ALIGN)
            prev = tl.multiple_of(own + ((b + ROUNDS - 1) % ROUNDS) * comm_words, SLOT_ALIGN)
            # The previous round's words per slot, rounded up to SLOT_ALIGN (inside the slot).
            clear_words = (tl.load(lay + L_CLEAR) + SLOT_ALIGN - 1) // SLOT_ALIGN * ALIGN_WORDS
            nclear = tl.cdiv(clear_words, BLOCK)
            timed_out = 0
            spins = 0  # re-reads so far, over all chunks and slots of this program
            for c in range(pid, tl.maximum(nchunks, nclear), nprog):
                idx = offs + c * BLOCK
                if c < nchunks:
                    m = idx < n_words
                    acc_lo = tl.zeros([BLOCK], tl.float32)
                    acc_hi = tl.zeros([BLOCK], tl.float32)
                    missing = 0
                    for s in tl.static_range(WORLD):
                        src = tl.multiple_of(cur + s * slot_words, SLOT_ALIGN) + idx
                        w = tl.load(src, mask=m, other=0, volatile=True)
                        empty = tl.max((w == EMPTY).to(tl.int32), axis=0)
                        while (empty > 0) & (spins < max_spins):
                            w = tl.load(src, mask=m, other=0, volatile=True)
                            empty = tl.max((w == EMPTY).to(tl.int32), axis=0)
                            spins += 1
                        missing = missing | empty
                        lo, hi = _decode(w, KIND)
                        acc_lo += lo
                        acc_hi += hi
                    res = _encode(acc_lo, acc_hi, KIND)
                    if missing > 0:  # never a partial sum
                        timed_out = 1
                        res = tl.full([BLOCK], _nan_word(KIND), tl.int32)
                    tl.store(ow + idx, res, mask=m)
                if c < nclear:
                    cm = idx < clear_words
                    for s in tl.static_range(WORLD):
                        dst = tl.multiple_of(prev + s * slot_words, SLOT_ALIGN) + idx
                        tl.store(dst, tl.full([BLOCK], EMPTY, tl.int32), mask=cm)
            if timed_out:
                tl.store(flag + F_TIMEOUT, 1)
                for r in tl.static_range(WORLD):  # poison every rank's workspace
                    tl.store(_table_ptr(ws_ptr, LAMPORT_AT + r, tl.int32) + status, POISON)
            arrived = tl.atomic_add(flag + F_ARRIVED, 1)
            if arrived == nprog - 1:
                tl.store(flag + F_ARRIVED, 0)
                tl.store(lay + L_CLEAR, n_words * 4)
                tl.store(flag + F_ROUND, ((b + 1) % ROUNDS).to(tl.int32))
