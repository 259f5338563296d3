"""The one cache policy of per-object caches (``devptr._core_api.IdentityCache``): keyed by
identity, each entry living exactly as long as its object."""

from __future__ import annotations

import gc
import weakref

import pytest

from devptr import PtrBuffer, PtrTypeError
from devptr._core_api import IdentityCache


class Obj:
    pass


def test_an_entry_lives_as_long_as_its_object() -> None:
    cache: IdentityCache[Obj, str] = IdentityCache()
    a, b = Obj(), Obj()
    assert cache.put(a, "a") == "a"
    cache.put(b, "b")
    assert (cache.get(a), cache.get(b), len(cache)) == ("a", "b", 2)
    ref = weakref.ref(a)
    del a
    gc.collect()
    assert ref() is None  # the cache did not keep it alive
    assert len(cache) == 1 and cache.get(b) == "b"


def test_a_reused_id_never_finds_the_old_value() -> None:
    cache: IdentityCache[Obj, int] = IdentityCache()
    ids = set()
    for k in range(200):  # CPython hands a freed object's address to the next one often
        obj = Obj()
        ids.add(id(obj))
        assert cache.get(obj) is None, k
        cache.put(obj, k)
        assert cache.get(obj) == k
        del obj
    assert len(ids) < 200  # ids were reused, so the check above was exercised
    assert len(cache) == 0


def test_pop_forgets_only_that_object() -> None:
    cache: IdentityCache[Obj, int] = IdentityCache()
    a, b = Obj(), Obj()
    cache.put(a, 1)
    cache.put(b, 2)
    cache.pop(a)
    cache.pop(a)  # nothing kept: no error
    assert (cache.get(a), cache.get(b), len(cache)) == (None, 2, 1)


def test_tables_can_be_cached_and_plain_values_are_refused() -> None:
    cache: IdentityCache[object, int] = IdentityCache()
    buf = PtrBuffer(2, pin_memory=False)
    cache.put(buf, 7)
    assert cache.get(buf) == 7
    with pytest.raises(PtrTypeError, match="weak reference"):
        cache.put(object(), 1)
