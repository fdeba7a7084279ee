"""TOML tables read into frozen dataclasses, every key and type checked.

:func:`from_table` builds a dataclass from a parsed TOML table: a key the dataclass has no field
for, a missing required key and a value of the wrong type are refused with an
:class:`~rcp_data.core.errors.InputError` that names the file and the key (``pool.size``,
``subsets[2].label``). TOML arrays become tuples; a nested dataclass reads a sub-table.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from functools import cache
from typing import Any, TypeVar

from rcp_data.core.errors import InputError, shown

T = TypeVar("T")


def key_of(where: str, key: str) -> str:
    """The dotted name of ``key`` inside table ``where`` (``pool`` + ``size`` = ``pool.size``)."""
    return f"{where}.{key}" if where else key


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def table_keys(cls: type) -> list[str]:
    """The keys a table read into ``cls`` may hold."""
    return sorted(f.name for f in dataclasses.fields(cls) if f.init)


def from_table(cls: type[T], raw: object, *, path: str, where: str, skip: tuple[str, ...] = (),
               **given: Any) -> T:
    """``cls`` built from the TOML table ``raw`` (read from ``path``, at key ``where``).

    ``skip``: fields the table must not hold (the caller fills them, ``given``)."""
    return cls(**table_values(cls, raw, path=path, where=where, skip=skip), **given)


def table_values(cls: type, raw: object, *, path: str, where: str,
                 skip: tuple[str, ...] = ()) -> dict[str, Any]:
    """The checked keyword arguments of ``cls`` that the TOML table ``raw`` holds."""
    if not isinstance(raw, dict):
        raise InputError(f"expected a table, got {shown(raw)}", path=path, field=where or None)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init and f.name not in skip}
    unknown = sorted(set(raw) - set(fields))
    if unknown:
        raise InputError(f"unknown key (known: {', '.join(sorted(fields))})", path=path,
                         field=key_of(where, unknown[0]))
    hints = _hints(cls)
    out: dict[str, Any] = {}
    for name, f in fields.items():
        if name not in raw:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise InputError("missing (required)", path=path, field=key_of(where, name))
            continue
        out[name] = value_of(hints[name], raw[name], path=path, key=key_of(where, name))
    return out


def value_of(tp: Any, value: object, *, path: str, key: str) -> Any:
    """``value`` checked against the type ``tp`` (and converted: lists to tuples, tables to
    dataclasses); an InputError naming ``path`` and ``key`` when it does not fit."""
    ok, out = _convert(tp, value, path, key)
    if not ok:
        raise InputError(f"expected {describe(tp)}, got {shown(value)}", path=path, field=key)
    return out


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _convert(tp: Any, v: object, path: str, key: str) -> tuple[bool, Any]:
    """``(fits, converted)``; a nested table that does not fit raises its own InputError."""
    if tp is Any:
        return True, v
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        for arm in args:
            if arm is type(None):
                if v is None:
                    return True, None
                continue
            ok, out = _convert(arm, v, path, key)
            if ok:
                return True, out
        return False, None
    if tp is str:
        return isinstance(v, str), v
    if tp is bool:
        return isinstance(v, bool), v
    if tp is int:
        return _is_int(v), v
    if tp is float:
        return (_is_int(v) or isinstance(v, float)), float(v) if _is_int(v) else v
    if origin is tuple:
        if not isinstance(v, list):
            return False, None
        items = args[:1] * len(v) if len(args) == 2 and args[1] is Ellipsis else args
        if len(items) != len(v):
            return False, None
        return True, tuple(value_of(t, x, path=path, key=f"{key}[{i}]")
                           for i, (t, x) in enumerate(zip(items, v, strict=True)))
    if origin in (dict, Mapping):
        if not isinstance(v, dict):
            return False, None
        vt = args[1] if args else Any
        return True, {k: value_of(vt, x, path=path, key=key_of(key, k)) for k, x in v.items()}
    if dataclasses.is_dataclass(tp):
        if not isinstance(v, dict):
            return False, None
        return True, from_table(tp, v, path=path, where=key)
    raise TypeError(f"no TOML reading for type {tp!r}")  # a programming error, not bad input


def describe(tp: Any) -> str:
    """What a value of type ``tp`` is, as an error message says it."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(describe(a) for a in args if a is not type(None))
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return f"a list of {_plural(args[0])}"
        return f"a list of {len(args)} {_plural(args[0])}"
    names = {str: "a string", int: "an integer", bool: "true or false", float: "a number"}
    return names.get(tp, "a table")


def _plural(tp: Any) -> str:
    names = {str: "strings", int: "integers", bool: "booleans", float: "numbers"}
    return names.get(tp, "tables")


__all__ = ["describe", "from_table", "key_of", "table_keys", "table_values", "value_of"]
