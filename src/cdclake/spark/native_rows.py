"""The compiled row readers' side in Python: what each table version's columns are, for the reader a
format declares (:class:`cdclake.formats.base.NativeRows`; Canal-JSON's is ``native/src/canal.rs``).

A reader turns a plain row message straight into change records, with no Python object per value. It
asks its *planner* here once per table version (a message's column names and type texts): the
columns' JSON of the change records, and per column a *kind*, the wire texts the reader turns into lake
texts itself (canonical digits, plain decimals, real dates ...), and the Python function it calls for
any other value: the decoder's converter followed by :func:`cdclake.schema.lake.value_text_function`,
the very two calls the decoder and :class:`~cdclake.spark.changes.ChangeWriter` make. Where that function
raises, or the columns cannot make a table, the reader leaves the message to the decoder, which says
what is wrong. tests/formats/test_canal_native.py holds each reader's records equal to the decoder's.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import orjson

from cdclake.errors import TypeParseError
from cdclake.formats.base import Codec, NativeRows, RowRecordReader
from cdclake.formats.limits import too_many_columns
from cdclake.schema.lake import value_text_function
from cdclake.schema.names import column_problem
from cdclake.types import Family, MySQLType

# The widest integers a reader takes as they are (any canonical digits of up to 38 digits); beyond, Python.
_ANY_INTEGER = (-(2**127), 2**127 - 1)
_NO_RANGE = (0, 0)
_BY_FAMILY = {
    Family.STRING: "text",
    Family.VECTOR: "text",
    Family.JSON: "text",
    Family.DECIMAL: "decimal",
    Family.DATE: "date",
    Family.DATETIME: "datetime",
    Family.TIME: "time",
    Family.BINARY: "latin1-binary",
    Family.GEOMETRY: "latin1-binary",
}

ColumnPlan = tuple[str, int, int, Callable[[str], Any]]


def native_reader(codec: Codec, options: Mapping[str, Any]) -> RowRecordReader | None:
    """``codec``'s compiled row reader for ``options`` (resolved here, as the decoder resolves them), or
    None where it has none."""
    native = codec.native_rows(codec.resolve(options))
    return None if native is None else native.reader(functools.partial(plan_columns, native))


def plan_columns(native: NativeRows, names: list[str], type_texts: list[str]) -> tuple[str, list[ColumnPlan]] | None:
    """What a reader needs of one table version (see the module docstring), or None where the decoder
    must read its messages: too many columns, a type that does not parse, columns that make no table."""
    if too_many_columns(len(names), "the columns") is not None:
        return None
    try:
        types = {name: MySQLType.parse(text) for name, text in zip(names, type_texts, strict=True)}
    except TypeParseError:
        return None
    if column_problem(types) is not None:
        return None
    columns = orjson.dumps({name: str(mtype) for name, mtype in types.items()}).decode()
    return columns, [_column_plan(native, mtype) for mtype in types.values()]


def _column_plan(native: NativeRows, mtype: MySQLType) -> ColumnPlan:
    convert, text = native.converter(mtype), value_text_function(mtype)

    def python_text(raw: str) -> Any:
        return text(convert(raw))

    family = mtype.family
    if family is Family.INTEGER:
        return ("integer", *mtype.integer_range(), python_text)
    if family is Family.BIT:
        return ("integer", 0, (1 << (mtype.length or 64)) - 1, python_text)
    if family is Family.YEAR or (family in (Family.ENUM, Family.SET) and mtype.elements is None):
        return ("integer", *_ANY_INTEGER, python_text)  # a year, a bare enum's index, a bare set's bitmask
    if family is Family.TIMESTAMP and native.utc_timestamps:
        return ("datetime", *_NO_RANGE, python_text)
    return (_BY_FAMILY.get(family, "python"), *_NO_RANGE, python_text)
