"""Open Protocol: every type of tests/strategies.py survives encode -> decode as far as the format carries
it, and the options (old value, updated columns only, compression, batching) do what TiCDC does."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdclake.errors import DecodeError, EncodeError, OptionError
from cdclake.formats.open_protocol.wire import split_batch
from cdclake.model import (
    Bootstrap,
    Ddl,
    DdlKind,
    LargeMessageKind,
    LargeMessageRef,
    Op,
    RowChange,
    TableSchema,
    Watermark,
)
from cdclake.types import Family, MySQLType
from cdclake.values import enum_index, set_bits
from tests.formats.open_protocol.helpers import CODEC, EDGE_VALUES, carried_type, decode, encode
from tests.strategies import TYPES, nullable_values_of, rows, values_of

# --- round trips ---------------------------------------------------------------------------------------


def carried_value(mysql_type: MySQLType, value: Any) -> Any:
    """Enum and set travel as index and bitmask: their member names are lost."""
    if value is None:
        return None
    if mysql_type.family is Family.ENUM:
        return enum_index(mysql_type, value)
    if mysql_type.family is Family.SET:
        return set_bits(mysql_type, value)
    return value


def exact(image: dict[str, Any] | None) -> Any:
    # Decimal equality ignores trailing zeros; the format keeps every digit, so compare the text.
    return image and {k: str(v) if isinstance(v, Decimal) else v for k, v in image.items()}


def assert_round_trip(row: RowChange, **options: Any) -> None:
    (decoded,) = decode(encode([row], **options)[0], **options)
    carried = {name: carried_type(t) for name, t in row.types.items()}
    assert (decoded.op, decoded.database, decoded.table, decoded.commit_ts) == (
        row.op,
        row.database,
        row.table,
        row.commit_ts,
    )
    assert decoded.types == carried
    assert decoded.key_columns == row.key_columns
    for side in ("before", "after"):
        image = getattr(row, side)
        expected = image and {name: carried_value(row.types[name], v) for name, v in image.items()}
        assert exact(getattr(decoded, side)) == exact(expected)
    # Decoded events keep their type codes and flags: a second trip changes nothing at all.
    assert decode(encode([decoded], **options)[0], **options) == [decoded]


ROW_OPS = st.sampled_from([Op.INSERT, Op.UPDATE, Op.DELETE])
COMMIT_TS = st.integers(0, 2**64 - 1)


@pytest.mark.parametrize("mysql_type", TYPES, ids=str)
@given(data=st.data())
@settings(max_examples=40, deadline=None)
def test_every_type_round_trips(mysql_type: MySQLType, data: st.DataObject) -> None:
    types = {"id": MySQLType("bigint", unsigned=True), "v": mysql_type}
    op = data.draw(ROW_OPS)
    images = [
        {"id": data.draw(values_of(types["id"])), "v": data.draw(nullable_values_of(mysql_type))} for _ in range(2)
    ]
    before, after = (images[0], None) if op is Op.DELETE else (images[0] if op is Op.UPDATE else None, images[1])
    assert_round_trip(RowChange(op, "db", "t", before, after, types, ("id",), data.draw(COMMIT_TS)))


@given(shape=rows(), data=st.data())
@settings(max_examples=80, deadline=None)
def test_rows_round_trip(shape: tuple[dict[str, MySQLType], dict[str, Any]], data: st.DataObject) -> None:
    types, after = shape
    before = {name: data.draw(nullable_values_of(t)) for name, t in types.items()}
    assert_round_trip(RowChange(Op.UPDATE, "db", "wide", before, after, types, ("id",), 7))


@pytest.mark.parametrize("tz", ["UTC", "Asia/Shanghai", "-03:30"])
def test_timestamps_round_trip_in_the_producer_zone(tz: str) -> None:
    instant = dt.datetime(2024, 2, 29, 23, 59, 59, 500000, tzinfo=dt.UTC)
    types = {"id": MySQLType("int"), "at": MySQLType("timestamp", decimals=6)}
    assert_round_trip(RowChange(Op.INSERT, "db", "t", None, {"id": 1, "at": instant}, types, ("id",), 1), tz=tz)
    (msg,) = encode([RowChange(Op.INSERT, "db", "t", None, {"id": 1, "at": instant}, types, ("id",), 1)], tz="+08:00")
    assert b'"v":"2024-03-01 07:59:59.500000"' in msg.value


@pytest.mark.parametrize(("type_text", "value"), EDGE_VALUES, ids=[t for t, _ in EDGE_VALUES])
def test_edge_values_round_trip(type_text: str, value: Any) -> None:
    types = {"id": MySQLType("int"), "v": MySQLType.parse(type_text)}
    assert_round_trip(RowChange(Op.UPDATE, "db", "t", {"id": 1, "v": None}, {"id": 1, "v": value}, types, ("id",), 9))


def test_null_and_the_string_null_stay_apart() -> None:
    types = {"id": MySQLType("int"), "a": MySQLType("varchar"), "b": MySQLType("text")}
    (msg,) = encode([RowChange(Op.INSERT, "db", "t", None, {"id": 1, "a": "null", "b": None}, types, ("id",), 1)])
    assert b'"a":{"t":15,"f":64,"v":"null"}' in msg.value and b'"b":{"t":252,"f":64,"v":null}' in msg.value
    assert decode(msg)[0].after == {"id": 1, "a": "null", "b": None}


def test_a_column_without_type_is_written_as_type_code_6() -> None:
    row = RowChange(Op.INSERT, "db", "t", None, {"id": 1, "n": None}, {"id": MySQLType("int")}, ("id",), 1)
    (msg,) = encode([row])
    assert b'"n":{"t":6,"f":64,"v":null}' in msg.value
    with pytest.raises(EncodeError, match="'n'"):
        encode([RowChange(Op.INSERT, "db", "t", None, {"id": 1, "n": 5}, {"id": MySQLType("int")}, ("id",), 1)])


# --- options ---------------------------------------------------------------------------------------------

TYPES_AB = {"id": MySQLType("int"), "a": MySQLType("varchar"), "b": MySQLType("decimal")}
UPDATE = RowChange(
    Op.UPDATE,
    "db",
    "t",
    {"id": 1, "a": "same", "b": None},
    {"id": 1, "a": "same", "b": Decimal("1.50")},
    TYPES_AB,
    ("id",),
    5,
)


def test_only_output_updated_columns_writes_changed_columns_and_decoding_fills_the_rest() -> None:
    (msg,) = encode([UPDATE], only_output_updated_columns=True)
    (value,) = (v for _, v in split_batch(msg.key, msg.value))
    # Only b changed (NULL -> 1.50): "p" holds its old value, NULL; the decoder takes id and a from "u".
    assert json.loads(value)["p"] == {"b": {"t": 246, "f": 65, "v": None}}
    (decoded,) = decode(msg)
    assert (decoded.op, decoded.before, decoded.after) == (UPDATE.op, UPDATE.before, UPDATE.after)


def test_without_old_value_an_update_reads_as_an_insert() -> None:
    # sink.open.output-old-value=false: "u" alone, which the spec and TiCDC's decoders read as an insert.
    (msg,) = encode([UPDATE], output_old_value=False)
    assert b'"p"' not in msg.value
    (decoded,) = decode(msg)
    assert (decoded.op, decoded.before, decoded.after) == (Op.INSERT, None, UPDATE.after)


@pytest.mark.parametrize("compression", ["snappy", "lz4"])
def test_each_event_value_is_compressed_on_its_own(compression: str) -> None:
    alter = Ddl(DdlKind.ALTER_TABLE, "db", "t", "ALTER TABLE t ADD c int", 6)
    messages = encode([UPDATE, UPDATE, alter, Watermark(7)], large_message_handle_compression=compression)
    assert len(messages) == 3
    frames = split_batch(messages[0].key, messages[0].value)
    assert len(frames) == 2 and all(not value.startswith(b"{") for _, value in frames)
    assert split_batch(messages[2].key, messages[2].value)[0][1] == b""  # resolved: no value to compress
    decoder = CODEC.decoder(large_message_handle_compression=compression)
    decoded = [event for msg in messages for event in decoder.decode(msg)]
    assert [type(e) for e in decoded] == [RowChange, RowChange, Ddl, Watermark]
    assert decoded[2].meta == {"ddl_type": 61} and decoded[1].after == UPDATE.after
    with pytest.raises(DecodeError, match="value is not JSON"):
        decode(messages[0])  # the consumer must be told the codec: the message does not say


def row_event(index: int, padding: int = 0) -> RowChange:
    types = {"id": MySQLType("int"), "pad": MySQLType("varchar")}
    return RowChange(Op.INSERT, "db", "t", None, {"id": index, "pad": "x" * padding}, types, ("id",), index)


def test_batches_close_at_max_batch_size() -> None:
    messages = encode([row_event(i) for i in range(40)])
    assert [len(split_batch(m.key, m.value)) for m in messages] == [16, 16, 8]
    assert [e.after["id"] for m in messages for e in decode(m)] == list(range(40))


def test_batches_close_before_max_message_bytes() -> None:
    one = encode([row_event(0, padding=100)])[0]
    single = len(one.key) + len(one.value) + 36  # TiCDC adds Kafka's record overhead to the count
    messages = encode([row_event(i, padding=100) for i in range(10)], max_message_bytes=3 * single)
    sizes = [len(m.key) + len(m.value) + 36 for m in messages]
    assert all(size <= 3 * single for size in sizes) and len(messages) > 3
    assert [e.after["id"] for m in messages for e in decode(m)] == list(range(10))


def test_an_event_larger_than_max_message_bytes_is_refused() -> None:
    with pytest.raises(EncodeError, match="more than max-message-bytes 500"):
        encode([row_event(0, padding=1000)], max_message_bytes=500)


def test_ddl_and_resolved_events_travel_alone() -> None:
    ddl = Ddl(DdlKind.CREATE_TABLE, "db", "t2", "CREATE TABLE t2 (id int)", 3)
    messages = encode([row_event(1), row_event(2), ddl, row_event(4), Watermark(5), Watermark(6)])
    assert [[type(e).__name__ for e in decode(m)] for m in messages] == [
        ["RowChange", "RowChange"],
        ["Ddl"],
        ["RowChange"],
        ["Watermark"],
        ["Watermark"],
    ]
    assert decode(messages[1])[0].meta == {"ddl_type": 3}


def test_events_the_format_cannot_carry_are_refused() -> None:
    schema = TableSchema("db", "t", ())
    with pytest.raises(EncodeError, match="cannot carry a Bootstrap"):
        encode([Bootstrap(schema)])
    no_ts = RowChange(Op.INSERT, "db", "t", None, {"id": 1}, {"id": MySQLType("int")}, ("id",), None)
    with pytest.raises(EncodeError, match="commit ts"):
        encode([no_ts])
    for type_text, value, reason in [
        ("timestamp", dt.datetime(2024, 1, 1), "timezone-aware"),
        ("datetime", dt.datetime(2024, 1, 1, tzinfo=dt.UTC), "naive datetime"),
        ("date", dt.datetime(2024, 1, 1), "not a datetime"),
        ("double", float("nan"), "cannot be written in JSON"),
        ("decimal", Decimal("Infinity"), "not a finite decimal"),
        ("enum('a','b')", "c", "not a member"),
        ("varbinary(4)", "text", "must be bytes, got str"),
        ("varchar(4)", b"raw", "takes str, got bytes"),
        ("varchar(4)", "\ud800", "not valid Unicode"),
        ("geometry", b"\x00", "only NULL"),
    ]:
        row = RowChange(Op.INSERT, "db", "t", None, {"v": value}, {"v": MySQLType.parse(type_text)}, (), 1)
        with pytest.raises(EncodeError, match=reason):
            encode([row])
    key_only = RowChange(Op.INSERT, "db", "t", None, {"id": 1}, {"id": MySQLType("int")}, ("id",), 1)
    with pytest.raises(EncodeError, match="needs its location"):
        encode([LargeMessageRef(LargeMessageKind.CLAIM_CHECK, key_only)])
    out_of_range = RowChange(Op.INSERT, "db", "t", None, {"id": 300}, {"id": MySQLType("tinyint")}, ("id",), 1)
    with pytest.raises(EncodeError, match=r"'id'.*outside the range of tinyint"):
        encode([out_of_range])


@pytest.mark.parametrize(
    "options", [{"max-batch-size": 0}, {"max-message-bytes": "many"}, {"tz": "Mars/Base"}, {"batch": 1}]
)
def test_bad_options_are_refused(options: dict[str, Any]) -> None:
    with pytest.raises(OptionError):
        CODEC.encoder(options)
