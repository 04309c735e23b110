"""Simple protocol: property round trips, bad input and fuzzing (only DecodeError escapes), the encoder's
refusals and the codecs' options."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdclake.errors import DecodeError, EncodeError, OptionError
from cdclake.formats.base import Codec
from cdclake.formats.compression import compressor
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
    RawMessage,
    RowChange,
    TableSchema,
    Watermark,
)
from cdclake.types import Family, MySQLType
from tests.formats.simple.helpers import (
    ALL_TYPES,
    AVRO,
    CODECS,
    JSON,
    USER_V1,
    USER_V2,
    at,
    case,
    case_value,
    decode_all,
    decode_json_row,
    docs_stream,
    encode,
    only,
    raw,
    user_schema,
)
from tests.fuzzing import mutations
from tests.strategies import TYPES, rows, values_of

# --- round trips --------------------------------------------------------------------------------------

TEMPORAL = (Family.DATETIME, Family.TIMESTAMP, Family.TIME)


def _as_read_back(mtype: MySQLType) -> MySQLType:
    """The protocol has no unknown fsp (JSON omits a zero ``decimal``), so the encoder writes a temporal
    column without one as fsp 6, which holds every value."""
    if mtype.family in TEMPORAL and mtype.decimals is None:
        return dataclasses.replace(mtype, decimals=6)
    return mtype


def exact(values: Mapping[str, Any] | None) -> Any:
    """Values compared with their exact form: a Decimal's digits, a float's bits, an instant's zone."""
    if values is None:
        return None
    out = {}
    for name, value in values.items():
        if isinstance(value, Decimal | float):
            out[name] = (type(value), repr(value))
        elif isinstance(value, dt.datetime):
            out[name] = (type(value), value.isoformat())
        else:
            out[name] = (type(value), value)
    return out


def _schema_of(column_types: dict[str, MySQLType], version: int) -> TableSchema:
    columns = tuple(ColumnSchema(name, mtype, nullable=name != "id") for name, mtype in column_types.items())
    return TableSchema("db", "t", columns, (IndexSchema("primary", ("id",), True, True),), table_id=1, version=version)


@pytest.mark.parametrize("codec", CODECS)
@settings(max_examples=150, deadline=None)
@given(
    shape=rows(),
    data=st.data(),
    tz=st.sampled_from(["UTC", "Asia/Shanghai", "+05:30"]),
    compression=st.sampled_from(["none", "snappy", "lz4"]),
)
def test_rows_round_trip(
    codec: Codec, shape: tuple[dict[str, MySQLType], dict[str, Any]], data: st.DataObject, tz: str, compression: str
) -> None:
    """Every type of tests/strategies.py (bigint unsigned max, decimal(65,30), all bytes, zero dates,
    negative TIME with fractions, enum, set, bit(64), JSON, NULL and "null"), as INSERT, UPDATE and
    DELETE, through the encoder and the decoder of each encoding: values, types and keys come back
    exactly, and encoding the decoded events again gives the same bytes. (Zones without DST only: a
    wall clock in a DST fold names two instants, which no Simple message can tell apart.)"""
    column_types, values = shape
    other = {name: data.draw(st.none() | st.just(v)) if name != "id" else v for name, v in values.items()}
    schema = _schema_of(column_types, version=data.draw(st.integers(1, 2**64 - 1)))
    commit_ts = data.draw(st.integers(0, 2**64 - 1))
    events: list[Event] = [
        Bootstrap(schema, meta={"buildTs": 1}),
        RowChange(Op.INSERT, "db", "t", None, values, column_types, commit_ts=commit_ts),
        RowChange(Op.UPDATE, "db", "t", values, other, column_types, commit_ts=commit_ts),
        RowChange(Op.DELETE, "db", "t", other, None, column_types, commit_ts=commit_ts),
    ]
    options = {"tz": tz, "large-message-handle-compression": compression}
    written = encode(codec, events, **options)
    decoded = [only(e) for e in decode_all(codec, written, **options)]
    assert [(c.name, c.type, c.nullable) for c in decoded[0].schema.columns] == [
        (c.name, _as_read_back(c.type), c.nullable) for c in schema.columns
    ]
    for event, back in zip(events[1:], decoded[1:], strict=True):
        assert isinstance(back, RowChange) and isinstance(event, RowChange)
        assert (back.op, back.commit_ts, back.schema_version, back.key_columns) == (
            event.op, commit_ts, schema.version, ("id",))
        assert exact(back.before) == exact(event.before)
        assert exact(back.after) == exact(event.after)
        assert dict(back.types) == {c.name: c.type for c in decoded[0].schema.columns}
    assert encode(codec, decoded, **options) == written


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("mtype", TYPES, ids=str)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_every_type_round_trips(codec: Codec, mtype: MySQLType, data: st.DataObject) -> None:
    """Each strategy type on its own, so every one meets its edge values (the strategies draw the ends
    of each range often): the value comes back exactly, as before and after image."""
    value = data.draw(values_of(mtype))
    schema = _schema_of({"id": MySQLType("bigint"), "c": mtype}, version=3)
    row = RowChange(Op.UPDATE, "db", "t", {"id": 1, "c": value}, {"id": 1, "c": None}, {}, commit_ts=1)
    back = only(decode_all(codec, encode(codec, [Bootstrap(schema), row]))[1])
    assert exact(back.before) == exact(row.before) and back.after == {"id": 1, "c": None}


# --- bad input ----------------------------------------------------------------------------------------


def _dml(**fields: Any) -> bytes:
    message = {"version": 1, "database": "simple", "table": "user", "tableID": 148, "type": "INSERT",
               "commitTs": 5, "buildTs": 1, "schemaVersion": USER_V1, "data": {"id": "1"}}
    message.update(fields)
    return orjson.dumps({k: v for k, v in message.items() if v is not None})


BAD_JSON = [
    (b"", "not JSON"),
    (b'{"version":1,"type":"INSERT"', "not JSON"),
    (b"[1]", "expected a JSON object"),
    (b'{"version":2,"type":"WATERMARK","commitTs":1,"buildTs":1}', "protocol version 1"),
    (b'{"version":1,"type":"RESOLVED","commitTs":1,"buildTs":1}', "field 'type' must be one of"),
    (b'{"version":1,"type":"WATERMARK","commitTs":-1,"buildTs":1}', "'commitTs' must be a uint64"),
    (b'{"version":1,"type":"WATERMARK","commitTs":"1","buildTs":1}', "'commitTs' must be int"),
    (b'{"version":1,"type":"BOOTSTRAP","commitTs":0,"buildTs":1}', "tableSchema: expected an object"),
    (_dml(database=7), "'database' must be str"),
    (_dml(old={"id": "1"}), "INSERT message carries data only"),
    (_dml(type="DELETE"), "DELETE message carries old only"),
    (_dml(handleKeyOnly="yes"), "'handleKeyOnly' must be bool"),
    (_dml(checksum={"version": 1}), "checksum: missing field 'corrupted'"),
    (_dml(data={"id": "x1"}), "data.id (int(11)): 'x1' does not fit"),
    (_dml(data={"id": "1", "nick": "x"}), "column 'nick' is not in simple.user schema version"),
    (_dml(data=["1"]), "field 'data' must be an object"),
    (_dml(data={"id": "1", "score": "NaN"}), "not a MySQL FLOAT/DOUBLE value"),
    (_dml(data={"id": "1", "score": "1e39"}), "data.score"),
]


@pytest.mark.parametrize(("value", "reason"), BAD_JSON, ids=[r for _, r in BAD_JSON])
def test_bad_json_raises_decode_error_with_format_reason_and_origin(value: bytes, reason: str) -> None:
    decoder = JSON.decoder()
    decoder.decode(raw(encode(JSON, [Bootstrap(user_schema(USER_V1))])[0]))
    origin = Origin(topic="cdc", partition=2, offset=99)
    with pytest.raises(DecodeError) as error:
        decoder.decode(RawMessage(None, value, origin))
    assert (error.value.format_name, error.value.origin) == ("simple", origin)
    assert reason in error.value.reason
    assert str(origin) in str(error.value)


def test_bad_timestamp_location() -> None:
    with pytest.raises(DecodeError, match="unknown time zone 'Mars/Base'"):
        decode_json_row({"ts": {"location": "Mars/Base", "value": "2024-01-01 00:00:00"}})


@pytest.mark.parametrize("codec", CODECS)
def test_tombstones_and_wrong_compression(codec: Codec) -> None:
    with pytest.raises(DecodeError, match="tombstone"):
        codec.decoder().decode(RawMessage(None, None, at(1)))
    value = encode(codec, [Watermark(5)], large_message_handle_compression="lz4")[0]
    with pytest.raises(DecodeError, match=r"cannot decompress \(snappy\)"):
        codec.decoder(large_message_handle_compression="snappy").decode(raw(value))
    with pytest.raises(DecodeError):
        codec.decoder().decode(raw(value))
    assert only(codec.decoder(large_message_handle_compression="lz4").decode(raw(value))).ts == 5


def test_compressed_message_is_the_compressed_json() -> None:
    """large-message-handle-compression compresses the whole value (Snappy block format)."""
    plain = encode(JSON, [Watermark(5)])[0]
    assert encode(JSON, [Watermark(5)], large_message_handle_compression="snappy")[0] == compressor("snappy")(plain)


def test_bad_avro_raises_decode_error() -> None:
    watermark = bytes.fromhex(case("25")["kafka_value_hex"])
    for value, reason in [
        (watermark + b"\x00", "1 bytes left after the Avro datum"),
        (watermark[:5], "not a Simple protocol Avro datum"),
        # A bare Watermark record (union branch 5) instead of a Message holding one.
        (b"\x0a" + watermark[3:], "expected a com.pingcap.simple.avro.Message datum (first byte 0x16), got a "
         "com.pingcap.simple.avro.Watermark"),
        (watermark[:1] + b"\x02" + watermark[2:], "a BOOTSTRAP message carries a com.pingcap.simple.avro.Bootstrap"),
    ]:
        with pytest.raises(DecodeError) as error:
            AVRO.decoder().decode(raw(value, 4))
        assert error.value.format_name == "simple-avro" and error.value.origin == at(4)
        assert reason in error.value.reason


SAMPLES = {
    Family.YEAR: 2024,
    Family.FLOAT: 0.5,
    Family.DOUBLE: 0.1,
    Family.DECIMAL: Decimal("-1.5"),
    Family.STRING: "text",
    Family.BINARY: b"\x00\xff",
    Family.JSON: '{"a":[1,null]}',
    Family.DATE: dt.date(2024, 1, 2),
    Family.DATETIME: dt.datetime(2024, 1, 2, 3, 4, 5),
    Family.TIMESTAMP: dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC),
    Family.TIME: -dt.timedelta(hours=838, microseconds=5),
}


def _sample(mtype: MySQLType) -> Any:
    """A non-NULL value of every strategy type, at an edge where the type has one."""
    if mtype.family is Family.INTEGER:
        return mtype.integer_range()[0 if mtype.unsigned else 1] or mtype.integer_range()[1]
    if mtype.family is Family.BIT:
        return (1 << (mtype.length or 1)) - 1
    if mtype.family in (Family.ENUM, Family.SET):
        return (mtype.elements or ())[-1]
    return SAMPLES[mtype.family]


def fuzz_seeds(codec: Codec) -> list[bytes]:
    """Every vector message of the encoding, and messages of every kind with a value of every type."""
    column_types = {"id": MySQLType("bigint"), **{f"c{i}": t for i, t in enumerate(TYPES)}}
    schema = _schema_of(column_types, version=42)
    full = {name: _sample(mtype) for name, mtype in column_types.items()}
    key_only = RowChange(Op.DELETE, "db", "t", {"id": 1}, None, {}, commit_ts=9)
    events: list[Event] = [
        Bootstrap(schema),
        RowChange(Op.UPDATE, "db", "t", full, dict.fromkeys(full) | {"id": 2}, {}, commit_ts=9),
        LargeMessageRef(LargeMessageKind.CLAIM_CHECK, key_only, "s3:/claim-check-bucket/x.json"),
        Ddl(DdlKind.ALTER_TABLE, "db", "t", "ALTER TABLE t ADD c int", 10, schema, schema),
        Watermark(11),
    ]
    seeds = encode(codec, events)
    if codec is JSON:
        seeds += docs_stream() + [case_value(n) for n in ("19", "20", "21", "22", "23", "24")]
    else:
        seeds.append(bytes.fromhex(case("25")["kafka_value_hex"]))
    return seeds


@pytest.mark.parametrize("codec", CODECS)
def test_fuzzed_messages_raise_only_decode_error(codec: Codec) -> None:
    """10,000 mutants per encoding, fed to decoders that know the seeds' schemas (so the mutants reach
    the values): each decodes or raises DecodeError, nothing else."""
    seeds = fuzz_seeds(codec)
    decoded = failed = 0
    decoder = codec.decoder()
    for count, value in enumerate(mutations(seeds, 10_000, seed=7)):
        if count % 200 == 0:  # a fresh primed decoder now and then, so held mutants do not pile up
            decoder = codec.decoder()
            for seed in seeds:
                decoder.decode(raw(seed))
        try:
            decoder.decode(raw(value))
            decoded += 1
        except DecodeError:
            failed += 1
    assert decoded + failed == 10_000 and decoded > 100 and failed > 1_000


# --- the encoder's refusals and the options -----------------------------------------------------------


@pytest.mark.parametrize("codec", CODECS)
def test_encoder_refuses_what_it_cannot_write(codec: Codec) -> None:
    row = RowChange(Op.INSERT, "db", "all", None, {"id": 1}, {}, commit_ts=1)
    encoder = codec.encoder()
    with pytest.raises(EncodeError, match=r"no table schema of db\.all was encoded"):
        encoder.encode([row])
    encoder.encode([Bootstrap(ALL_TYPES)])
    for event, reason in [
        (dataclasses.replace(row, schema_version=99), "db.all schema version 99 was not encoded"),
        (dataclasses.replace(row, after={"id": 1, "nick": "x"}), "column 'nick' is not in db.all"),
        (dataclasses.replace(row, after={"id": -1}), r"db.all.id \(bigint\(20\) unsigned\): cannot write -1"),
        (dataclasses.replace(row, after={"id": 1, "ratio": 0.1}), "is not a FLOAT"),
        (dataclasses.replace(row, commit_ts=None), "has no commit ts"),
        (dataclasses.replace(row, op=Op.UPDATE), "UPDATE of db.all has no before image"),
        (Heartbeat(5), "cannot carry a Heartbeat"),
        (PendingRow("db", "all", 100), "cannot carry a PendingRow"),
        (Bootstrap(dataclasses.replace(ALL_TYPES, version=None)), "has no version"),
    ]:
        with pytest.raises(EncodeError, match=reason):
            encoder.encode([event])


def test_codecs_and_options() -> None:
    assert (JSON.name, AVRO.name) == ("simple", "simple-avro")
    assert set(JSON.options) == set(AVRO.options) == {
        "large-message-handle-compression", "tz", "claim-check-storage-uri", "on-handle-key-only"}
    with pytest.raises(OptionError):
        JSON.decoder(large_message_handle_compression="zstd")
    with pytest.raises(OptionError):
        AVRO.encoder(tz="Mars/Base")


@pytest.mark.parametrize("codec", CODECS)
def test_rows_without_a_version_take_the_latest_schema(codec: Codec) -> None:
    """A row without schema_version (from a format that has none) is written with its table's latest
    schema: after a DDL, the DDL's schema after, not its schema before."""
    alter = Ddl(DdlKind.ALTER_TABLE, "simple", "user", "ALTER TABLE `user` ADD COLUMN `createTime` TIMESTAMP",
                20, user_schema(USER_V1), user_schema(USER_V2, created=True))
    row = RowChange(Op.INSERT, "simple", "user", None, {"id": 1, "createTime": None}, {}, commit_ts=21)
    events = decode_all(codec, encode(codec, [alter, row]))
    assert only(events[1]).schema_version == USER_V2
