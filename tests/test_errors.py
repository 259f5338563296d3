"""The error taxonomy, kept: every ``raise`` in the package is a DevPtrError of one built-in
family, and public calls do not leak numpy's, torch's or Python's own exceptions."""

from __future__ import annotations

import ast
import importlib
import inspect
import typing
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
import torch

import devptr
from devptr import (
    CapacityError,
    DevicePtr,
    DevPtrError,
    PtrBuffer,
    PtrTable,
    PtrTypeError,
    SizeBuffer,
    StateError,
    UnknownBackendError,
    store,
)
from devptr._errors import InvalidValueError

PACKAGE = Path(devptr.__file__).parent

FAMILIES: tuple[type[BaseException], ...] = (
    TypeError,
    ValueError,
    IndexError,
    OverflowError,
    RuntimeError,
    # two idiomatic families beyond the five: a missing optional dependency, a timeout
    ImportError,
    TimeoutError,
)

# Raises that are not errors of devptr's API, each with its reason.
ALLOWED: dict[str, str] = {
    "AttributeError": "__getattr__ (PEP 562) and an immutable __setattr__ must raise AttributeError",
    "NotImplementedError": "abstract methods of private base classes",
    "typer.Exit": "CLI exit status (control flow, not an error)",
    "devptr._convert._Bad": "private sentinel, always caught in the same function",
}


OPTIONAL_DEPENDENCIES = frozenset({"mypy", "libcst", "triton", "matplotlib"})
"""Extras a module may need (pyproject's optional dependencies): `dev` installs them all."""


def _modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        yield ".".join(parts), path


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def _resolve(module: object, dotted: str) -> object:
    obj: object = module
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def _base_of(module: object) -> type[BaseException]:
    """The error base class: DevPtrError everywhere, the vendorable module included (inside
    devptr, ``devptr.vendor`` installs devptr's error classes in it)."""
    return DevPtrError


def _check_class(cls: type[BaseException], base: type[BaseException] = DevPtrError) -> str | None:
    if not issubclass(cls, base):
        return f"{cls.__module__}.{cls.__qualname__} is not a {base.__name__}"
    if cls is base:
        return "the bare DevPtrError base has no built-in family"
    if not issubclass(cls, FAMILIES):
        return f"{cls.__qualname__} is of no built-in family"
    return None


def _problem(module: object, name: str, exc: ast.expr) -> str | None:
    callee = exc.func if isinstance(exc, ast.Call) else exc
    dotted = _dotted(callee)
    if dotted is None:
        return f"cannot resolve {ast.unparse(exc)}"
    if dotted in ALLOWED:
        return None
    try:
        target = _resolve(module, dotted)
    except AttributeError:
        return f"{dotted} is a local value: raise a DevPtrError class or factory by name"
    if isinstance(target, type) and issubclass(target, BaseException):
        qual = f"{target.__module__}.{target.__qualname__}"
        if qual in ALLOWED:
            return None
        return _check_class(target, _base_of(module))
    if callable(target):  # a factory: its return annotation names the error class
        hints = typing.get_type_hints(target)
        ret = hints.get("return")
        classes = typing.get_args(ret) or (ret,)  # one class, or a union of them
        if all(isinstance(c, type) and issubclass(c, BaseException) for c in classes):
            found = [p for c in classes if (p := _check_class(c, _base_of(module))) is not None]
            return found[0] if found else None
        return f"factory {dotted} does not declare the error class it returns"
    return f"{dotted} is not an exception class"


def _raises(tree: ast.AST) -> Iterator[tuple[ast.Raise, str]]:
    """Every ``raise X`` with the name of the function it is in."""
    stack: list[tuple[ast.AST, str]] = [(tree, "<module>")]
    while stack:
        node, func = stack.pop()
        for child in ast.iter_child_nodes(node):
            name = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else func
            if isinstance(child, ast.Raise) and child.exc is not None:
                yield child, name
            stack.append((child, name))


def test_every_raise_is_a_devptr_error_of_a_builtin_family() -> None:
    problems: list[str] = []
    checked = 0
    for modname, path in _modules():
        tree = ast.parse(path.read_text(), str(path))
        try:
            module = importlib.import_module(modname)
        except ModuleNotFoundError as exc:  # an optional extra not installed here (GPU image)
            if (exc.name or "").split(".")[0] in OPTIONAL_DEPENDENCIES:
                continue
            raise
        for node, func in _raises(tree):
            assert node.exc is not None
            callee = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if _dotted(callee) == "AttributeError" and func not in ("__getattr__", "__setattr__"):
                problems.append(f"{path.name}:{node.lineno}: AttributeError outside __getattr__/__setattr__")
                continue
            checked += 1
            problem = _problem(module, modname, node.exc)
            if problem:
                problems.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: {problem}")
    assert checked > 200  # the walk really saw the package
    assert not problems, "\n".join(problems)


def test_the_walk_catches_a_bare_builtin_and_the_bare_base() -> None:
    module = importlib.import_module("devptr._errors")
    for source, expect in (
        ("raise ValueError('x')", "not a DevPtrError"),
        ("raise DevPtrError('x')", "no built-in family"),
        ("raise np.linalg.LinAlgError('x')", "cannot"),
    ):
        exc = ast.parse(source).body[0]
        assert isinstance(exc, ast.Raise) and exc.exc is not None
        try:
            problem = _problem(module, "devptr._errors", exc.exc)
        except AttributeError:
            problem = "cannot resolve"
        assert problem is not None and (expect in problem or "local value" in problem), problem
    ok = ast.parse("raise CapacityError('x')").body[0]
    assert isinstance(ok, ast.Raise) and ok.exc is not None
    assert _problem(module, "devptr._errors", ok.exc) is None


def test_every_exported_error_is_listed_in_the_readme() -> None:
    readme = (PACKAGE.parent / "README.md").read_text()
    errors = [n for n in devptr.__all__ if n.endswith("Error")]
    assert len(errors) >= 10
    missing = [n for n in errors if f"`{n}`" not in readme]
    assert not missing, missing


# -- public calls do not leak third-party or bare built-in exceptions -------------------
P = DevicePtr(0x1000)


def _cases() -> list[tuple[str, Callable[[], object], type[DevPtrError], type[Exception]]]:
    t4 = torch.zeros(4, dtype=torch.int64)
    a4 = np.zeros(4, dtype=np.uint64)
    buf = PtrBuffer(4, pin_memory=False)
    return [
        ("store(t, 4, p) on 4 entries", lambda: store(t4, 4, P), CapacityError, IndexError),
        ("store(t, -1, p)", lambda: store(t4, -1, P), CapacityError, IndexError),
        ("store(a, 4, p) numpy", lambda: store(a4, 4, P), CapacityError, IndexError),
        ("store(t, slice(2, 9), ...)", lambda: store(t4, slice(2, 9), [P] * 2), CapacityError, IndexError),
        ("store(t, [0, 7], ...)", lambda: store(t4, [0, 7], [P, P]), CapacityError, IndexError),
        ("store(t, 1.0, p)", lambda: store(t4, 1.0, [P]), PtrTypeError, TypeError),  # type: ignore[arg-type]
        ("PtrBuffer(2.0)", lambda: PtrBuffer(2.0), PtrTypeError, TypeError),  # type: ignore[type-var]
        ("PtrBuffer(-1)", lambda: PtrBuffer(-1), CapacityError, IndexError),
        ("PtrBuffer(2, device=3.5)", lambda: PtrBuffer(2, device=3.5), PtrTypeError, TypeError),  # type: ignore[arg-type]
        (
            "PtrBuffer(2, device='nosuch')",
            lambda: PtrBuffer(2, device="nosuch"),
            UnknownBackendError,
            ValueError,
        ),
        ("buf[-2:] = [p, p]", lambda: buf.__setitem__(slice(-2, None), [P, P]), CapacityError, IndexError),
        ("buf[2:10]", lambda: buf[2:10], CapacityError, IndexError),
        ("buf[4]", lambda: buf[4], CapacityError, IndexError),
        ("buf['a']", lambda: buf["a"], PtrTypeError, TypeError),  # type: ignore[call-overload]
        ("buf.fill(-1, [p])", lambda: buf.fill(-1, [P]), CapacityError, IndexError),
        ("buf.to_device(2) without a mirror", lambda: buf.to_device(2), StateError, RuntimeError),
        ("SizeBuffer(2).fill(0, [1.5])", lambda: SizeBuffer(2).fill(0, [1.5]), PtrTypeError, TypeError),  # type: ignore[list-item]
        ("SizeBuffer(2)[2]", lambda: SizeBuffer(2)[2], CapacityError, IndexError),
        (
            "PtrTable fill past capacity",
            lambda: PtrTable(1, {"p": devptr.Column.PTR}).fill(0, p=[P, P]),
            CapacityError,
            IndexError,
        ),
        ("DevicePtr(16) == 16", lambda: DevicePtr(16) == 16, PtrTypeError, TypeError),
        ("DevicePtr(16) < 17", lambda: DevicePtr(16) < 17, PtrTypeError, TypeError),  # type: ignore[operator]
        ("encoding_for('cuda:x')", lambda: devptr.encoding_for("cuda:x"), DevPtrError, ValueError),
        ("ptr_tensor(ints)", lambda: devptr.ptr_tensor([1, 2]), PtrTypeError, TypeError),  # type: ignore[list-item]
    ]


@pytest.mark.parametrize("case", range(len(_cases())), ids=[c[0] for c in _cases()])
def test_public_calls_raise_devptr_errors_of_the_right_family(case: int) -> None:
    _name, call, error, family = _cases()[case]
    with pytest.raises(error) as info:
        call()
    assert isinstance(info.value, family) and isinstance(info.value, DevPtrError)


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without a CUDA driver")
def test_device_without_a_driver_is_a_state_error() -> None:
    for make in (
        lambda: PtrBuffer(4, device="cuda"),
        lambda: SizeBuffer(4, device="cuda:0"),
        lambda: devptr.ptr_tensor([P], device="cuda:0"),
    ):
        with pytest.raises(StateError, match="not available"):
            make()


def test_failed_writes_write_nothing() -> None:
    t = torch.arange(4, dtype=torch.int64)
    with pytest.raises(CapacityError):
        store(t, slice(-2, None), [P, P])
    assert t.tolist() == [0, 1, 2, 3]
    buf = PtrBuffer(4, pin_memory=False)
    buf.fill(0, [DevicePtr(8)] * 4)
    with pytest.raises(CapacityError):
        buf[-2:] = [P, P]
    assert [p.addr for p in buf[:]] == [8] * 4


def test_kernel_and_layout_value_errors_are_value_errors() -> None:
    pytest.importorskip("triton")
    from devptr.kernels import batch_memcpy
    from devptr.kernels._lamport_layout import LamportLayout

    src = PtrBuffer(1, pin_memory=False)
    dst = PtrBuffer(1, pin_memory=False)
    sizes = SizeBuffer(1, pin_memory=False)
    with pytest.raises(InvalidValueError, match="power of two"):
        batch_memcpy(src, dst, sizes, chunk=3)
    with pytest.raises(InvalidValueError, match="multiple"):
        LamportLayout(2, 17)
    sig = inspect.signature(LamportLayout)
    assert list(sig.parameters)[:2] == ["world_size", "comm_size"]
