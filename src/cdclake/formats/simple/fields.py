"""Reading the fields of a decoded message, with reasons that say what was expected and what came.

Both encodings arrive as dicts (orjson's, or fastavro's records). A field the Simple protocol leaves
out is absent in JSON and ``None`` in Avro, so both read as ``None`` here.
"""

from __future__ import annotations

from typing import Any, TypeVar

T = TypeVar("T")

UINT64_MAX = (1 << 64) - 1


class Invalid(Exception):
    """A message part that is not what the Simple protocol writes. The decoder turns it into a
    :class:`~cdclake.errors.DecodeError` with the format name and the message's origin."""


def describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def as_dict(value: Any, where: str) -> dict[str, Any]:
    if type(value) is not dict:
        raise Invalid(f"{where}: expected an object, got {describe(value)}")
    return value


def required(obj: dict[str, Any], key: str, kind: type[T], where: str) -> T:
    """``obj[key]``, which must be exactly of ``kind`` (a bool is not an int here)."""
    value = obj.get(key)
    if type(value) is not kind:
        if value is None:
            raise Invalid(f"{where}: missing field {key!r}")
        raise Invalid(f"{where}: field {key!r} must be {kind.__name__}, got {describe(value)}")
    return value


def optional(obj: dict[str, Any], key: str, kind: type[T], where: str) -> T | None:
    value = obj.get(key)
    if value is not None and type(value) is not kind:
        raise Invalid(f"{where}: field {key!r} must be {kind.__name__} or absent, got {describe(value)}")
    return value


def uint64(obj: dict[str, Any], key: str, where: str) -> int:
    """A Go ``uint64`` field: commitTs, schemaVersion, a table schema's version."""
    value = required(obj, key, int, where)
    if not 0 <= value <= UINT64_MAX:
        raise Invalid(f"{where}: field {key!r} must be a uint64, got {value}")
    return value
