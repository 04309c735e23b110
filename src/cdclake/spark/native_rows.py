"""The compiled row readers' side in Python: what each table version's columns are, for the reader a
format declares (:class:`cdclake.formats.base.NativeRows`: Canal-JSON's ``native/src/canal.rs``, the
Simple protocol's ``native/src/simple.rs``, the Open Protocol's ``native/src/open.rs``).

A reader turns a plain row message straight into change records, with no Python object per value. It
asks its *planner* here once per table version (a message's column names and type texts): the
columns' JSON of the change records, and per column a *kind*, the wire texts the reader turns into lake
texts itself (canonical digits, plain decimals, real dates ...), and the Python function it calls for
any other value: the decoder's converter followed by :func:`cdclake.schema.lake.value_text_function`,
the very two calls the decoder and :class:`~cdclake.spark.changes.ChangeWriter` make. Where that function
raises, or the columns cannot make a table, the reader leaves the message to the decoder, which says
what is wrong. tests/formats/test_canal_native.py, test_simple_native.py and test_open_native.py hold
each reader's records equal to the decoder's.

The kinds (native/src/texts.rs): ``text`` (the text itself), ``integer`` (canonical digits within a
range), ``decimal``, ``float``, ``double``, ``date``, ``datetime``, ``time`` (TiDB's texts of them, and
Go's of floats), ``timestamp`` (a TIMESTAMP's
UTC wall clock), ``latin1-binary`` (bytes as ISO-8859-1 characters), ``base64-binary`` (bytes in
standard base64), ``base64-text`` (UTF-8 text in standard base64), ``go-quoted-binary`` (bytes in Go's
quoted text), ``enum-index`` (an ENUM's 1-based index: its member), ``set-bits`` (a SET's bitmask: its
members) and ``python`` (every value through the function).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import orjson

from cdclake.errors import TypeParseError
from cdclake.formats.base import Codec, ColumnSpec, Decoder, NativeRows, RowRecordReader
from cdclake.formats.limits import too_many_columns
from cdclake.schema.lake import value_text_function
from cdclake.schema.names import column_problem
from cdclake.types import Family, MySQLType

# The widest integers a reader takes as they are (any canonical digits of up to 38 digits); beyond, Python.
_ANY_INTEGER = (-(2**127), 2**127 - 1)
_NO_RANGE = (0, 0)
_YEARS = (0, 2155)  # MySQL's; Python decides any other (some formats' readers refuse it)

NativeReaders = Callable[[Decoder], RowRecordReader]
"""Makes a partition's compiled row reader, beside the codec's own decoder of that partition."""


def native_readers(codec: Codec, options: Mapping[str, Any]) -> NativeReaders | None:
    """What makes ``codec``'s compiled row readers for ``options`` (resolved here, as the decoder resolves
    them), or None where it has none."""
    native = codec.native_rows(codec.resolve(options))
    return None if native is None else functools.partial(native.reader, functools.partial(plan_columns, native))


def plan_columns(native: NativeRows, names: list[str], type_texts: list[str]) -> tuple[str, list[ColumnSpec]] | None:
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


def _column_plan(native: NativeRows, mtype: MySQLType) -> ColumnSpec:
    convert, text = native.converter(mtype), value_text_function(mtype)

    def python_text(raw: str) -> Any:
        return text(convert(raw))

    family = mtype.family
    if family is Family.INTEGER:
        return ("integer", *mtype.integer_range(), [], python_text)
    if family is Family.BIT:
        return ("integer", 0, (1 << (mtype.length or 64)) - 1, [], python_text)
    if family is Family.YEAR:
        return ("integer", *_YEARS, [], python_text)
    if family in (Family.ENUM, Family.SET) and mtype.elements is None:
        # a bare enum's index, a bare set's bitmask
        return ("integer", *(native.member_numbers or _ANY_INTEGER), [], python_text)
    kind = native.kinds_by_name.get(mtype.name) or native.kinds.get(family, "python")
    return (kind, *_NO_RANGE, list(mtype.elements or ()), python_text)
