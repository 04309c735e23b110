"""One table's ``schema.dataColumn`` and ``schema.primaryKey`` as the decoder reads them (:class:`_Table`),
with the decoder's fast path: image readers compiled per column order, and for the careful path the
values of an image that need reading, per pattern of JSON value types.
"""

from __future__ import annotations

import binascii
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from cdclake.formats.dataworks.values import _DATE_MS, _EPOCH, _MILLISECOND, _READERS, _read_double, _Readers
from cdclake.formats.dataworks.wire import BOOLEAN, BYTES, DATE, DOUBLE, LONG, MYSQL_TYPE_OF, STRING, _show
from cdclake.formats.limits import MAX_COMPILED_COLUMNS, too_many_columns
from cdclake.types import MySQLType

_NONE = type(None)


class _Unusual(Exception):
    """A message the fast path does not take: the careful path reads it."""


# Statements that check the non-null value in variable ``{v}`` of a column of each DataWorks type and,
# where it is not already its decoded value, store that under the column's name (the literal ``{n}``)
# in ``image``: what the careful reader of the type returns, or a raise where that would (a BYTES text
# outside base64 or ASCII, a DOUBLE integer past the float range); and anything the careful reader
# refuses raises too. A DOUBLE that came as text is also kept in ``texts``.
_INLINE_READS: Mapping[str, str] = {
    STRING: "if type({v}) is not str: raise _Unusual",
    # A float is a LONG past 64 bits that orjson rounded: the careful path reads it again, exactly.
    LONG: "if type({v}) is not int: raise _Unusual",
    DOUBLE: (
        "if type({v}) is not float:\n"
        "    if type({v}) is str:\n"
        "        if texts is None: texts = {{}}\n"
        "        texts[{n}] = {v}\n"
        "    image[{n}] = _read_double({v})"
    ),
    DATE: "if type({v}) is not int or {v} not in _DATE_MS: raise _Unusual\nimage[{n}] = _EPOCH + _MILLISECOND * {v}",
    BYTES: "if type({v}) is not str: raise _Unusual\nimage[{n}] = _a2b_base64({v}, strict_mode=True)",
    BOOLEAN: "if type({v}) is not bool: raise _Unusual",
}
_INLINE_SCOPE: Mapping[str, Any] = {
    "_Unusual": _Unusual,
    "_read_double": _read_double,
    "_DATE_MS": _DATE_MS,
    "_EPOCH": _EPOCH,
    "_MILLISECOND": _MILLISECOND,
    "_a2b_base64": binascii.a2b_base64,
}
# Reads an image's values in place, given its dict of the schema's columns in order; returns the DOUBLEs
# that came as text, or None.
_ImageReader = Callable[[dict[str, Any]], dict[str, Any] | None]


def _compile_image_reader(kinds: Mapping[str, str]) -> _ImageReader:
    """The reader of images whose columns are ``kinds``' names, in order: straight-line code that checks
    each value's JSON type and converts the few that need it, with no loop or lookup per column. Column
    names, which come from messages, appear in the code only as ``repr`` literals."""
    body = ["def read(image):", f"    {''.join(f'v{i}, ' for i in range(len(kinds))) or '()'} = image.values()"]
    body.append("    texts = None")
    for i, (name, kind) in enumerate(kinds.items()):
        body.append(f"    if v{i} is not None:")
        body += [f"        {line}" for line in _INLINE_READS[kind].format(v=f"v{i}", n=repr(name)).splitlines()]
    body.append("    return texts")
    namespace = dict(_INLINE_SCOPE)
    exec(compile("\n".join(body), "<dataworks image reader>", "exec"), namespace)
    reader: _ImageReader = namespace["read"]
    return reader


# The kinds whose JSON value is already the decoded value, and its Python type.
_PASSED_AS_IS: Mapping[str, type] = {STRING: str, LONG: int, DOUBLE: float, BOOLEAN: bool}
# For one pattern of an image's JSON value types: the values to read, and the DOUBLEs that came as text.
_Steps = tuple[tuple[tuple[str, Callable[[Any], Any]], ...], tuple[str, ...]]


class _Table:
    """One table's ``schema.dataColumn`` and ``schema.primaryKey``, read once: each column's DataWorks
    type and MySQL type, the compiled reader of images of its columns in order (compiled when the fast
    path first reads one), and for the careful path which values of an image need converting,
    remembered per pattern of JSON value types."""

    __slots__ = ("fast_reader", "key_columns", "kinds", "order", "primary_key", "raw", "steps", "types")
    _MAX_PATTERNS = 64  # value patterns remembered per table; NULLs in many columns make many

    def __init__(self, raw: Any, primary_key: Any) -> None:
        if type(raw) is not list:
            raise ValueError(f"schema.dataColumn: expected an array of {{name, type}}, got {_show(raw)}")
        fault = too_many_columns(len(raw), "schema.dataColumn")
        if fault is not None:  # the columns' order is compiled into a reader
            raise ValueError(fault)
        kinds: dict[str, str] = {}
        for index, column in enumerate(raw):
            name = column.get("name") if type(column) is dict else None
            kind = column.get("type") if type(column) is dict else None
            if type(name) is not str or type(kind) is not str or kind not in MYSQL_TYPE_OF:
                raise ValueError(
                    f"schema.dataColumn[{index}]: expected {{name, type}} with type one of "
                    f"{', '.join(MYSQL_TYPE_OF)}, got {_show(column)}"
                )
            if name in kinds:
                raise ValueError(f"schema.dataColumn[{index}]: column {name!r} listed twice")
            kinds[name] = kind
        if not (primary_key is None or (type(primary_key) is list and all(type(n) is str for n in primary_key))):
            raise ValueError(f"schema.primaryKey: expected null or an array of column names, got {_show(primary_key)}")
        self.raw: list[Any] = raw
        self.primary_key = primary_key
        self.key_columns: tuple[str, ...] = tuple(primary_key or ())
        self.kinds = kinds
        self.order = tuple(kinds)
        self.types: Mapping[str, MySQLType] = MappingProxyType({n: MYSQL_TYPE_OF[k] for n, k in kinds.items()})
        self.steps: dict[tuple[type, ...], _Steps] = {}
        self.fast_reader: _ImageReader | None = None

    def fast_image(self, container: Any) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """:meth:`read_image` for the usual image: ``{"dataColumn": {...}}`` with the schema's columns in
        its order. Raises :class:`_Unusual` for anything else, and may raise anything on a bad value: the
        careful path then reads the message again."""
        if type(container) is not dict or len(container) != 1:
            raise _Unusual
        data = container.get("dataColumn")
        if type(data) is not dict:
            raise _Unusual
        names = tuple(data)
        if names != self.order:
            raise _Unusual
        # The same names, as orjson's key cache gives them: the next comparison is by identity.
        self.order = names
        reader = self.fast_reader
        if len(names) > MAX_COMPILED_COLUMNS:
            raise _Unusual  # too wide to compile in time: the careful path reads it in linear time
        if reader is None:
            reader = self.fast_reader = _compile_image_reader(self.kinds)
        return data, reader(data)

    def read_image(self, container: Any, readers: _Readers, where: str) -> tuple[dict[str, Any], Any]:
        """An image's values (in the message's own dict), and the DOUBLEs that came as text (or None)."""
        data = container.get("dataColumn") if type(container) is dict else None
        if type(data) is not dict:
            raise ValueError(f"{where}: expected {{\"dataColumn\": {{column: value}}}}, got {_show(container)}")
        names = tuple(data)
        value_types = tuple(map(type, data.values()))
        if names == self.order and readers is _READERS:
            steps = self.steps.get(value_types)
            if steps is None:
                steps = self._steps(names, value_types, readers, where)
                if len(self.steps) < self._MAX_PATTERNS:
                    self.steps[value_types] = steps
        else:
            steps = self._steps(names, value_types, readers, where)
        reads, text_names = steps
        texts = dict(zip(text_names, map(data.__getitem__, text_names), strict=True)) if text_names else None
        name = ""
        try:
            for name, read in reads:
                data[name] = read(data[name])
        except ValueError as exc:
            raise ValueError(f"{where}.dataColumn.{name}: {exc}") from None
        return data, texts

    def _steps(self, names: tuple[str, ...], value_types: tuple[type, ...], readers: _Readers, where: str) -> _Steps:
        """The columns whose values need reading, for an image with these names and JSON value types."""
        reads, text_names = [], []
        for name, value_type in zip(names, value_types, strict=True):
            kind = self.kinds.get(name)
            if kind is None:
                raise ValueError(f"{where}.dataColumn.{name}: the column is not in schema.dataColumn")
            if value_type is not _NONE and value_type is not _PASSED_AS_IS.get(kind):
                reads.append((name, readers[kind]))
                if kind == DOUBLE and value_type is str:
                    text_names.append(name)
        return tuple(reads), tuple(text_names)
