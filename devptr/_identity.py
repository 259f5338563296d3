"""The one lifetime policy of devptr's per-object caches: keyed by identity, held weakly.

A launcher that checks a table or a workspace once and keeps what it derived (kernel
views, a launch plan) looks it up by the object's identity on every call. The cache holds
the object through a weak reference: an entry lives exactly as long as its object, is
dropped when the object is collected (so no stale entry is found when CPython reuses the
id), and never keeps an object alive. The value must not refer back to its object (else
the object is never collected); views of memory the object owns are fine.

Objects that cannot be weakly referenced are refused (:class:`PtrTypeError`): every
object devptr caches for (its tables, a Lamport workspace) can be.
"""

from __future__ import annotations

import weakref
from typing import Generic, TypeVar

from devptr._errors import PtrTypeError, describe

K = TypeVar("K")
V = TypeVar("V")


class IdentityCache(Generic[K, V]):
    """Values derived from objects, found by ``id(obj)``, each living as long as its object.

    :meth:`get` costs one dict lookup and one weak-reference call; the entry of a collected
    object is removed by the reference's callback.
    """

    __slots__ = ("__weakref__", "_entries")

    def __init__(self) -> None:
        self._entries: dict[int, tuple[weakref.ref[K], V]] = {}

    def get(self, obj: K) -> V | None:
        """The value kept for ``obj`` (this very object), or None."""
        hit = self._entries.get(id(obj))
        if hit is not None and hit[0]() is obj:
            return hit[1]
        return None

    def put(self, obj: K, value: V) -> V:
        """Keep ``value`` for ``obj`` until ``obj`` is collected (or :meth:`pop`); returns it."""
        key = id(obj)
        entries = self._entries

        def drop(ref: weakref.ref[K]) -> None:  # only this entry: the id may be reused since
            hit = entries.get(key)
            if hit is not None and hit[0] is ref:
                del entries[key]

        try:
            ref = weakref.ref(obj, drop)
        except TypeError:
            raise PtrTypeError(f"cannot cache for {describe(obj)}: it takes no weak reference") from None
        entries[key] = (ref, value)
        return value

    def pop(self, obj: K) -> None:
        """Forget ``obj``'s value (nothing if none is kept)."""
        hit = self._entries.get(id(obj))
        if hit is not None and hit[0]() is obj:
            del self._entries[id(obj)]

    def __len__(self) -> int:
        """Entries kept (of objects not yet collected)."""
        return len(self._entries)


__all__ = ["IdentityCache"]
