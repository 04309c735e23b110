"""The event JSON form: every event comes back equal from its JSON, and values take the documented forms."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdclake.errors import DecodeError
from cdclake.eventjson import dumps_event, event_from_json, event_to_json, loads_event
from cdclake.model import (
    Bootstrap,
    ColumnSchema,
    Ddl,
    DdlKind,
    Event,
    Heartbeat,
    IndexSchema,
    LargeMessageKind,
    LargeMessageRef,
    Op,
    Origin,
    PendingRow,
    RowChange,
    TableSchema,
    Transaction,
    TransactionMark,
    Watermark,
)
from cdclake.types import MySQLType
from cdclake.values import ZeroTemporal
from tests.strategies import TYPES, nullable_values_of, rows


@st.composite
def row_changes(draw: st.DrawFn) -> RowChange:
    types, values = draw(rows())
    op = draw(st.sampled_from(Op))
    new_values = {column: draw(nullable_values_of(mtype)) for column, mtype in types.items()} | {"id": values["id"]}
    return RowChange(
        op=op,
        database=draw(st.text(max_size=8)),
        table=draw(st.text(max_size=8)),
        before=None if op is Op.INSERT else values,
        after=None if op is Op.DELETE else new_values if op is Op.UPDATE else values,
        types=types,
        key_columns=("id",),
        commit_ts=draw(st.none() | st.integers(0, 2**64 - 1)),
        schema_version=draw(st.none() | st.integers(0, 2**63 - 1)),
        table_id=draw(st.none() | st.integers(0, 2**63 - 1)),
        origin=draw(st.none() | st.builds(Origin, file=st.just("a.jsonl"), line=st.integers(1, 99))),
        meta=draw(st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=5), max_size=3)),
    )


@settings(max_examples=300, deadline=None)
@given(row_changes())
def test_row_changes_come_back_equal_from_their_json(event: RowChange) -> None:
    assert event_from_json(event_to_json(event)) == event
    back = loads_event(dumps_event(event))
    assert back == event
    # Decimal equality ignores trailing zeros; the JSON form must keep them.
    assert isinstance(back, RowChange)
    for image, image_back in ((event.before, back.before), (event.after, back.after)):
        for column, value in (image or {}).items():
            if isinstance(value, Decimal):
                assert image_back is not None
                assert image_back[column].as_tuple() == value.as_tuple()


@pytest.mark.parametrize(
    "mtype",
    [
        *TYPES,
        MySQLType("datetime", decimals=0),
        MySQLType("timestamp", decimals=0),
        MySQLType("time", decimals=0),
        MySQLType("int", unsigned=True, zerofill=True, length=10),
        MySQLType("enum", elements=()),
    ],
    ids=str,
)
def test_the_type_text_in_types_parses_back_to_the_same_type(mtype: MySQLType) -> None:
    assert MySQLType.parse(str(mtype)) == mtype


def _row(types: dict[str, str], values: dict[str, Any]) -> RowChange:
    return RowChange(
        op=Op.INSERT,
        database="shop",
        table="t",
        before=None,
        after=values,
        types={column: MySQLType.parse(text) for column, text in types.items()},
    )


@pytest.mark.parametrize(
    ("type_text", "value", "json_value"),
    [
        ("bigint unsigned", 2**64 - 1, 2**64 - 1),
        ("bit(64)", 2**64 - 1, 2**64 - 1),
        ("decimal(65,30)", Decimal("-12345678901234567890123456789012345.123456789012345678901234567890"),
         "-12345678901234567890123456789012345.123456789012345678901234567890"),
        ("decimal(10,4)", Decimal("1.5000"), "1.5000"),
        ("double", 0.1, 0.1),
        ("double", -math.inf, "-Infinity"),
        ("float", 1.5, 1.5),
        ("varbinary(16)", bytes([0, 255, 10]), "AP8K"),
        ("date", dt.date(2024, 2, 29), "2024-02-29"),
        ("date", ZeroTemporal("0000-00-00"), "0000-00-00"),
        ("datetime(6)", dt.datetime(2024, 5, 1, 10, 0, 0, 250000), "2024-05-01T10:00:00.250000"),
        ("datetime", ZeroTemporal("2024-00-15 00:00:00"), "2024-00-15 00:00:00"),
        ("timestamp", dt.datetime(2024, 5, 1, 10, 0, tzinfo=dt.UTC), "2024-05-01T10:00:00+00:00"),
        ("time(6)", -dt.timedelta(hours=838, minutes=59, seconds=59), "-838:59:59"),
        ("time(6)", dt.timedelta(seconds=1, microseconds=5), "00:00:01.000005"),
        ("enum('a','b')", "b", "b"),
        ("enum", 2, 2),
        ("set('x','y')", "x,y", "x,y"),
        ("json", '{"a":[1]}', '{"a":[1]}'),
        ("varchar(10)", "null", "null"),
        ("varchar(10)", None, None),
    ],
)
def test_values_take_the_documented_json_form(type_text: str, value: Any, json_value: Any) -> None:
    event = _row({"c": type_text}, {"c": value})
    line = dumps_event(event)
    assert event_to_json(event)["after"]["c"] == json_value
    back = loads_event(line)
    assert isinstance(back, RowChange)
    assert back == event
    if isinstance(value, float) and math.isnan(value) is False:
        assert math.copysign(1, back.after["c"]) == math.copysign(1, value)  # type: ignore[index]


def test_nan_is_written_as_text_and_read_back_as_nan() -> None:
    line = dumps_event(_row({"c": "double"}, {"c": math.nan}))
    assert orjson.loads(line)["after"]["c"] == "NaN"
    back = loads_event(line)
    assert isinstance(back, RowChange)
    assert math.isnan(back.after["c"])  # type: ignore[index]


def test_integers_beyond_64_bits_are_written_and_read_exactly() -> None:
    huge, tiny = 2**70 + 1, -(2**63) - 1
    event = Watermark(ts=1, meta={"big": huge, "small": tiny})
    line = dumps_event(event)
    assert str(huge).encode() in line
    assert str(tiny).encode() in line
    assert loads_event(line) == event


def test_a_timestamp_without_offset_is_read_as_utc_and_one_with_an_offset_is_moved_to_utc() -> None:
    obj = event_to_json(_row({"a": "timestamp", "b": "timestamp"}, {"a": None, "b": None}))
    obj["after"] = {"a": "2024-05-01T10:00:00", "b": "2024-05-01T18:00:00+08:00"}
    event = event_from_json(obj)
    assert isinstance(event, RowChange)
    assert event.after == {
        "a": dt.datetime(2024, 5, 1, 10, tzinfo=dt.UTC),
        "b": dt.datetime(2024, 5, 1, 10, tzinfo=dt.UTC),
    }


SCHEMA = TableSchema(
    database="shop",
    table="orders",
    columns=(
        ColumnSchema("id", MySQLType("bigint", unsigned=True), nullable=False),
        ColumnSchema("note", MySQLType("varchar", length=64), default="none", charset="utf8mb4",
                     collation="utf8mb4_bin"),
        ColumnSchema("at", MySQLType("datetime", decimals=0)),
    ),
    indexes=(IndexSchema("PRIMARY", ("id",), unique=True, primary=True),),
    table_id=88,
    version=449_000_000_000_000_001,
)

ORIGIN = Origin(topic="cdc", partition=2, offset=40, index=1)

OTHER_EVENTS: list[Event] = [
    Ddl(DdlKind.ALTER_TABLE, "shop", "orders", "ALTER TABLE orders ADD note varchar(64)", commit_ts=7,
        schema_before=SCHEMA, schema_after=SCHEMA, origin=ORIGIN, meta={"buildTs": 1}),
    Ddl(DdlKind.CREATE_DATABASE, "shop", "", "CREATE DATABASE shop"),
    Watermark(ts=449_000_000_000_000_000, origin=ORIGIN),
    Bootstrap(schema=SCHEMA, meta={"buildTs": 5}),
    Heartbeat(ts_ms=1_714_557_600_000, origin=Origin(file="h.jsonl", line=3)),
    Transaction(TransactionMark.BEGIN, meta={"sequenceId": "1"}),
    Transaction(TransactionMark.END, "shop", "orders"),
    LargeMessageRef(
        LargeMessageKind.CLAIM_CHECK,
        _row({"id": "bigint"}, {"id": 5}),
        location="s3://bucket/claim/5.json",
    ),
    LargeMessageRef(LargeMessageKind.HANDLE_KEY_ONLY, _row({"id": "bigint"}, {"id": 6})),
    PendingRow("shop", "orders", 3, origin=ORIGIN, commit_ts=449460043903926324),
]


@pytest.mark.parametrize("event", OTHER_EVENTS, ids=lambda e: type(e).__name__)
def test_every_kind_of_event_comes_back_equal(event: Event) -> None:
    assert loads_event(dumps_event(event)) == event


def test_a_watermark_names_its_resolved_ts_commit_ts_like_every_other_event() -> None:
    obj = event_to_json(Watermark(ts=449_000_000_000_000_000))
    assert obj == {"kind": "watermark", "commit_ts": 449_000_000_000_000_000, "meta": {}}
    assert event_from_json({"kind": "watermark", "commit_ts": 5}) == Watermark(ts=5)


def test_bootstrap_carries_its_schema_at_the_top_level() -> None:
    obj = event_to_json(Bootstrap(schema=SCHEMA))
    assert obj["kind"] == "bootstrap"
    assert (obj["database"], obj["table"], obj["schema_version"]) == ("shop", "orders", SCHEMA.version)
    assert obj["columns"][2] == {"name": "at", "type": "datetime(0)", "nullable": True, "default": None,
                                 "charset": None, "collation": None}


def test_fields_with_defaults_may_be_left_out() -> None:
    event = event_from_json(
        {"kind": "row", "op": "delete", "database": "d", "table": "t", "before": {"id": "7.50"},
         "after": None, "types": {"id": "decimal(5,2)"}}
    )
    decimal = MySQLType("decimal", length=5, decimals=2)
    assert event == RowChange(Op.DELETE, "d", "t", {"id": Decimal("7.50")}, None, {"id": decimal})


@pytest.mark.parametrize(
    ("obj", "reason"),
    [
        ([1], "expected an event object, got list"),
        ({"kind": "rows"}, "unknown event kind 'rows'; kinds: row, ddl, watermark"),
        ({"kind": "watermark"}, "watermark event without field 'commit_ts'"),
        ({"kind": "watermark", "commit_ts": "5"}, "expected commit_ts as an integer, got '5'"),
        ({"kind": "row", "op": "upsert", "types": {}}, "expected op as one of insert, update, delete, got 'upsert'"),
        ({"kind": "row", "op": "insert", "database": "d", "table": "t", "before": None,
          "after": {"price": 1.5}, "types": {"price": "decimal(5,2)"}},
         "column 'price' (decimal(5,2)): expected a decimal as a string, got 1.5"),
        ({"kind": "row", "op": "insert", "database": "d", "table": "t", "before": None,
          "after": {"b": "not base64!"}, "types": {"b": "blob"}}, "column 'b' (blob): expected standard base64"),
        ({"kind": "row", "op": "insert", "database": "d", "table": "t", "before": None,
          "after": {"n": True}, "types": {"n": "int"}}, "column 'n' (int): expected a JSON integer, got True"),
        ({"kind": "row", "op": "insert", "database": "d", "table": "t", "before": None,
          "after": {}, "types": {"n": "intt"}}, "unknown MySQL type 'intt'"),
        ({"kind": "bootstrap", "database": "d", "table": "t", "columns": [{"name": "a"}]},
         "bootstrap event without field 'type'"),
    ],
)
def test_a_bad_event_object_is_refused_with_the_reason(obj: Any, reason: str) -> None:
    with pytest.raises(DecodeError) as caught:
        event_from_json(obj)
    assert caught.value.format_name == "event-json"
    assert reason in caught.value.reason


@pytest.mark.parametrize("line", [b"{", b'{"kind":"watermark","commit_ts":NaN}', b""])
def test_a_line_that_is_not_json_is_refused(line: bytes) -> None:
    with pytest.raises(DecodeError, match="not JSON"):
        loads_event(line)
