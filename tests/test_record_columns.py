"""Records collected in Arrow's buffers (cdclake._native.Columns through RecordColumns) make the record
batch pyarrow makes of the same values, and a record that does not fit its fields is refused whole."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdclake._native import Columns
from cdclake.ordering.records import RecordColumns, arrow_batch, arrow_schema

FIELDS = (("s", "string"), ("b", "binary"), ("i", "int"), ("l", "bigint"))
VALUES = {
    "string": st.text(),  # any code point but a lone surrogate, which UTF-8 cannot hold
    "binary": st.binary(),
    "int": st.integers(-(2**31), 2**31 - 1),
    "bigint": st.integers(-(2**63), 2**63 - 1),
}
RECORDS = st.lists(st.tuples(*(st.none() | VALUES[sql_type] for _, sql_type in FIELDS)), max_size=40)


def _pyarrows_batch(records: list[tuple[Any, ...]]) -> pa.RecordBatch:
    schema = arrow_schema(FIELDS)
    columns = list(zip(*records, strict=True)) or [() for _ in FIELDS]
    return pa.RecordBatch.from_arrays([pa.array(c, type=f.type) for c, f in zip(columns, schema, strict=True)],
                                      schema=schema)


@settings(max_examples=150, deadline=None)
@given(st.lists(RECORDS, min_size=1, max_size=3))
def test_each_take_is_the_batch_pyarrow_makes_of_the_records_since_the_last(batches: list[list[tuple[Any, ...]]]
                                                                           ) -> None:
    columns = RecordColumns(FIELDS)
    for records in batches:
        for record in records:
            columns.add_values(record)
        assert len(columns) == len(records)
        taken = columns.take()
        taken.validate(full=True)
        assert taken.equals(_pyarrows_batch(records))
        assert taken.to_pylist() == [dict(zip(("s", "b", "i", "l"), r, strict=True)) for r in records]
        assert len(columns) == 0


def test_texts_may_come_as_either_str_or_bytes_as_pyarrow_takes_them() -> None:
    batch = arrow_batch([(b"caf\xc3\xa9", "\u00e9", None, None)], FIELDS)
    assert batch.to_pylist() == [{"s": "café", "b": "é".encode(), "i": None, "l": None}]


@pytest.mark.parametrize(("record", "error", "says"), [
    (("x", None, 2**31, None), ValueError, 'field "i" holds 32-bit integers, not 2147483648'),
    (("x", None, None, 2**63), TypeError, 'field "l": a 64-bit integer, not 9223372036854775808'),
    (("x", None, None), ValueError, "a record of 3 values for 4 fields"),
    (("x", None, None, None, None), ValueError, "a record of more than 4 values"),
    ((1, None, None, None), TypeError, 'field "s": a str or bytes, not 1'),
    (("x", None, "1", None), TypeError, 'field "i": a 64-bit integer, not 1'),
    ((b"\xff", None, None, None), ValueError, 'field "s" holds strings, and these bytes are not UTF-8'),
    (("\ud800", None, None, None), UnicodeEncodeError, "surrogates not allowed"),
])
def test_a_record_that_does_not_fit_is_refused_whole(record: tuple[Any, ...], error: type[Exception],
                                                     says: str) -> None:
    columns = RecordColumns(FIELDS)
    columns.add_values(("before", b"1", 1, 1))
    with pytest.raises(error, match=says):
        columns.add_values(record)
    columns.add_values(("after", None, 2, None))
    taken = columns.take()
    taken.validate(full=True)
    assert taken.to_pylist() == [{"s": "before", "b": b"1", "i": 1, "l": 1},
                                 {"s": "after", "b": None, "i": 2, "l": None}]


def test_a_field_of_another_type_is_refused_at_once() -> None:
    with pytest.raises(ValueError, match='field "x": no column of Spark SQL type "double"'):
        Columns([("x", "double")])
