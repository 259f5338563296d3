"""Map line numbers of a rewritten text back to the text as written.

The codemods run one after another, each on the previous one's output, and TODO comments
add lines; a warning must still name the line of the file the user has open.
"""

from __future__ import annotations

import bisect
import difflib


class LineMap:
    """Lines of ``new`` -> lines of ``old`` (1-based), from a line diff of the two texts.

    A line kept as it was maps exactly; a line inside a replaced block maps to the
    corresponding line of the old block (its last line when the new block is longer); an
    inserted line maps to the old line that follows the insertion.
    """

    def __init__(self, old: str, new: str) -> None:
        matcher = difflib.SequenceMatcher(
            None, old.splitlines(), new.splitlines(), autojunk=False
        )
        self._blocks = [
            (j1, j2, i1, i2, tag) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if j2 > j1
        ]
        self._starts = [b[0] for b in self._blocks]

    def to_old(self, line: int) -> int:
        """The old line for ``line`` of the new text (unchanged when outside both texts)."""
        k = bisect.bisect_right(self._starts, line - 1) - 1
        if k < 0:
            return line
        j1, _, i1, i2, tag = self._blocks[k]
        offset = line - 1 - j1
        if tag == "equal":
            return i1 + offset + 1
        if tag == "replace":
            return i1 + min(offset, i2 - i1 - 1) + 1
        return i1 + 1  # inserted: the old line that follows
