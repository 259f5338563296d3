"""The Lamport workspace table: 3N+2 device addresses in five named sections.

The layout is the one vLLM's ``LamportWorkspace`` hands its C++ kernel as ``void**`` (the
TensorRT-LLM / flashinfer one-shot Lamport all-reduce layout, plus a layout buffer):

====================  ===========  ===================================================
section               entries      what each entry addresses
====================  ===========  ===================================================
``comm``              N            communication buffers (null placeholders here)
``barrier``           N            barrier flags (null placeholders here)
``lamport``           N            rank r's Lamport buffer (3 x comm_size bytes), as
                                   mapped into *this* rank's address space
``flag``              1            this rank's flag buffer: int32[3]
``layout``            1            this rank's layout buffer: int64[2]
====================  ===========  ===================================================
"""

from __future__ import annotations

from typing import Final

import attrs

from devptr import InvalidValueError
from devptr._core_api import positive_int

SECTION_NAMES: Final[tuple[str, ...]] = ("comm", "barrier", "lamport", "flag", "layout")
"""Section names in table order."""

FLAG_WORDS: Final = 3
"""The flag buffer: int32 ``{arrival counter, timeout flag, round buffer index (0, 1, 2)}``."""
FLAG_ARRIVED: Final = 0
FLAG_TIMEOUT: Final = 1
FLAG_ROUND: Final = 2

LAYOUT_WORDS: Final = 2
"""The layout buffer: int64 ``{clear_size, comm_size}``.

``clear_size``: bytes per slot the previous round wrote (the kernel clears that many in
each slot of the previous round's buffer); ``comm_size``: bytes of one round's buffer.
"""
LAYOUT_CLEAR: Final = 0
LAYOUT_COMM: Final = 1

ROUNDS: Final = 3
"""Round buffers per Lamport buffer (triple buffering)."""

SENTINEL_BITS: Final = 0x8000_0000
"""The empty-slot marker: the 32-bit word of IEEE-754 float32 negative zero."""

SLOT_ALIGN: Final = 16
"""Each rank's slot in a round buffer starts on a 16-byte boundary."""

STATUS_BYTES: Final = SLOT_ALIGN
"""The status block after the round buffers of every Lamport buffer; its first int32 word
is the poison word: the empty-slot word while the workspace is healthy, :data:`POISON_BITS`
once any rank timed out (that rank writes it into every rank's buffer)."""

POISON_BITS: Final = 1
"""The poison word's value after a timeout (any rank's)."""


def _positive_int(what: str, value: object, minimum: int = 1) -> int:
    return positive_int(value, what, minimum)


def _world_size(value: object) -> int:
    return _positive_int("world_size", value)


def _comm_size(value: object) -> int:
    return _positive_int("comm_size", value)


@attrs.frozen
class LamportLayout:
    """Where each section of the table lies, and how a Lamport buffer is divided.

    A Lamport buffer is ``ROUNDS`` round buffers of ``comm_size`` bytes, then a status
    block of :data:`STATUS_BYTES` (the poison word); round buffer ``b`` holds one slot per
    rank, ``slot_bytes`` each, rank ``r``'s slot at byte ``b * comm_size + r * slot_bytes``.

    Parameters
    ----------
    world_size
        Number of ranks N (>= 1).
    comm_size
        Bytes of one round buffer (a positive multiple of 16); the Lamport buffer of each
        rank is ``3 * comm_size + 16`` bytes (the round buffers and the status block).
    """

    world_size: int = attrs.field(converter=_world_size)
    comm_size: int = attrs.field(converter=_comm_size)

    def __attrs_post_init__(self) -> None:
        if self.comm_size % SLOT_ALIGN:
            raise InvalidValueError(
                f"comm_size must be a multiple of {SLOT_ALIGN} bytes (got {self.comm_size})"
            )
        if self.slot_bytes == 0:
            raise InvalidValueError(
                f"comm_size {self.comm_size} leaves no room for {self.world_size} slots of {SLOT_ALIGN} bytes"
            )

    @property
    def capacity(self) -> int:
        """Table entries: ``3 * N + 2``."""
        return 3 * self.world_size + 2

    @property
    def slot_bytes(self) -> int:
        """Bytes of one rank's slot in a round buffer: the largest message, in bytes."""
        return self.comm_size // self.world_size // SLOT_ALIGN * SLOT_ALIGN

    @property
    def lamport_bytes(self) -> int:
        """Bytes of one rank's Lamport buffer (``3 * comm_size`` + the status block)."""
        return self.status_offset + STATUS_BYTES

    @property
    def status_offset(self) -> int:
        """Byte offset of the status block (the poison word) in a Lamport buffer."""
        return ROUNDS * self.comm_size

    @property
    def sections(self) -> dict[str, range]:
        """Section name to the table indices it covers, in table order."""
        n = self.world_size
        return {
            "comm": range(0, n),
            "barrier": range(n, 2 * n),
            "lamport": range(2 * n, 3 * n),
            "flag": range(3 * n, 3 * n + 1),
            "layout": range(3 * n + 1, 3 * n + 2),
        }

    def kernel_constants(self) -> dict[str, int]:
        """The layout facts the kernel is compiled with, as ``tl.constexpr`` keyword arguments.

        Table positions (``LAMPORT_AT``: rank 0's Lamport buffer, ``FLAG_AT``, ``LAYOUT_AT``),
        the flag and layout words, the round count, the slot alignment, the empty-slot
        word (as a signed int32, the type the kernel compares words in) and the poison
        word's value (the status block follows the round buffers). Derived from this
        module's declarations only: the kernel carries no copy of them.
        """
        return {
            "WORLD": self.world_size,
            "LAMPORT_AT": self.section("lamport").start,
            "FLAG_AT": self.section("flag").start,
            "LAYOUT_AT": self.section("layout").start,
            "F_ARRIVED": FLAG_ARRIVED,
            "F_TIMEOUT": FLAG_TIMEOUT,
            "F_ROUND": FLAG_ROUND,
            "L_CLEAR": LAYOUT_CLEAR,
            "ROUNDS": ROUNDS,
            "SLOT_ALIGN": SLOT_ALIGN,
            "EMPTY": SENTINEL_BITS - (1 << 32) if SENTINEL_BITS >= 1 << 31 else SENTINEL_BITS,
            "POISON": POISON_BITS,
        }

    def section(self, name: str) -> range:
        """Indices of section ``name`` (one of :data:`SECTION_NAMES`)."""
        try:
            return self.sections[name]
        except KeyError:
            raise InvalidValueError(f"no section {name!r}; sections are {list(SECTION_NAMES)}") from None
