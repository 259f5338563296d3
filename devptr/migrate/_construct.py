"""Build DevicePtr expressions from the sub-expressions an engine fix points at.

Recognition is the engine's: a fix names, for each ``X.data_ptr()`` call in the value it
rewrites, the receiver ``X`` (its ``owner`` spans, see :class:`devptr.lint.engine.FixKind`).
Here ``X.data_ptr()`` (a call whose receiver is one of those nodes) becomes
``devptr.DevicePtr.of(X)``, ``X.data_ptr() + k`` becomes ``devptr.DevicePtr.of(X,
offset=k)``, a literal ``0`` branch becomes ``devptr.DevicePtr.NULL``, and any other
address value ``v`` becomes ``devptr.DevicePtr(v)``. Nothing is copied or evaluated: these
functions build syntax.
"""

from __future__ import annotations

from collections.abc import Collection

import libcst as cst

from devptr.migrate._names import attr_chain, devptr_call, strip_parens

Owners = Collection[int]
"""``id()`` of the receiver nodes ``X`` of the ``X.data_ptr()`` calls the engine named."""


def owner_of(node: cst.BaseExpression, owners: Owners) -> cst.BaseExpression | None:
    """``X`` when ``node`` is the call ``X.data_ptr()`` the engine named, else None."""
    node = strip_parens(node)
    if (
        isinstance(node, cst.Call)
        and not node.args
        and isinstance(node.func, cst.Attribute)
        and id(node.func.value) in owners
    ):
        return node.func.value
    return None


def _holds_owner(node: cst.CSTNode, owners: Owners) -> bool:
    found = False

    class _Find(cst.CSTVisitor):
        def on_visit(self, sub: cst.CSTNode) -> bool:
            nonlocal found
            found = found or id(sub) in owners
            return not found

    node.visit(_Find())
    return found


def pointer(node: cst.BaseExpression, owners: Owners) -> cst.BaseExpression:
    """The ``DevicePtr`` expression for an address expression ``node``."""
    bare = strip_parens(node)
    owner = owner_of(bare, owners)
    if owner is not None:
        return devptr_call(("DevicePtr", "of"), [owner])
    if isinstance(bare, cst.BinaryOperation) and isinstance(bare.operator, cst.Add):
        base = owner_of(bare.left, owners)
        if base is not None:
            return devptr_call(("DevicePtr", "of"), [base], [("offset", bare.right)])
    if isinstance(bare, cst.IfExp) and _holds_owner(bare, owners):
        return cst.IfExp(
            test=bare.test, body=_pointer_or_null(bare.body, owners),
            orelse=_pointer_or_null(bare.orelse, owners),
        )  # fmt: skip
    return devptr_call(("DevicePtr",), [bare])


def _pointer_or_null(node: cst.BaseExpression, owners: Owners) -> cst.BaseExpression:
    bare = strip_parens(node)
    if isinstance(bare, cst.Integer) and bare.evaluated_value == 0:
        return attr_chain("devptr", "DevicePtr", "NULL")
    return pointer(bare, owners)


def _element(node: cst.BaseExpression, owners: Owners) -> cst.BaseExpression | None:
    """An element of a sequence of addresses: only one holding a named ``data_ptr()``."""
    bare = strip_parens(node)
    if isinstance(bare, cst.Integer) and bare.evaluated_value == 0:
        return attr_chain("devptr", "DevicePtr", "NULL")
    if isinstance(bare, _DISPLAYS) or not _holds_owner(bare, owners):
        return None  # a row of a 2-D table, or a value not known to be an address
    return pointer(bare, owners)


_DISPLAYS = (
    cst.List, cst.Tuple, cst.ListComp, cst.GeneratorExp, cst.Dict, cst.DictComp, cst.Set,
    cst.SetComp,
)  # fmt: skip


def pointers(node: cst.BaseExpression, owners: Owners) -> cst.BaseExpression | None:
    """A list of DevicePtrs for a list/tuple display or comprehension of addresses.

    None when an element holds no ``data_ptr()`` the engine named (a table mixing
    addresses with other values, or a starred element).
    """
    bare = strip_parens(node)
    if isinstance(bare, (cst.List, cst.Tuple)) and bare.elements:
        items: list[cst.BaseExpression] = []
        for element in bare.elements:
            item = _element(element.value, owners) if isinstance(element, cst.Element) else None
            if item is None:
                return None
            items.append(item)
        return cst.List([cst.Element(item) for item in items])
    if isinstance(bare, (cst.ListComp, cst.GeneratorExp)):
        elt = _element(bare.elt, owners)
        return None if elt is None else cst.ListComp(elt=elt, for_in=bare.for_in)
    return None


def tensors_or_pointers(
    node: cst.BaseExpression, owners: Owners, target: cst.CSTNode | None
) -> cst.BaseExpression | None:
    """What ``devptr.ptr_tensor`` gets for the data of an address table.

    The tensors themselves where every element is ``X.data_ptr()``: ``[a.data_ptr(),
    b.data_ptr()]`` -> ``[a, b]``, ``[t.data_ptr() for t in E]`` (``target`` is ``t``) ->
    ``list(E)`` (``E`` itself when it is a list or tuple display), which iterates ``E`` as
    the comprehension did; ``[o.x.data_ptr() for o in E]`` -> ``[o.x for o in E]``.
    DevicePtrs otherwise (see :func:`pointers`).
    """
    bare = strip_parens(node)
    if isinstance(bare, (cst.List, cst.Tuple)) and bare.elements:
        owners_of = [
            owner_of(e.value, owners) if isinstance(e, cst.Element) else None
            for e in bare.elements
        ]
        if all(o is not None for o in owners_of):
            return cst.List([cst.Element(o) for o in owners_of if o is not None])
        return pointers(bare, owners)
    if isinstance(bare, (cst.ListComp, cst.GeneratorExp)):
        owner = owner_of(bare.elt, owners)
        if owner is None:
            return pointers(bare, owners)
        comp = bare.for_in
        if (
            comp.inner_for_in is None
            and not comp.ifs
            and comp.asynchronous is None
            and target is not None
            and comp.target is target
            and isinstance(comp.target, cst.Name)
            and strip_parens(owner).deep_equals(comp.target)
        ):
            source = strip_parens(comp.iter)
            if isinstance(source, (cst.List, cst.Tuple)):
                return source
            return cst.Call(func=cst.Name("list"), args=[cst.Arg(source)])
        return cst.ListComp(elt=owner, for_in=comp)
    return None
