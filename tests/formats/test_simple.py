"""Simple protocol codecs (JSON ``simple`` and Avro ``simple-avro``): every vector of
vectors/ticdc-simple/ and the Simple cases 19-25 of vectors/ticdc-cases/, the schema cache and its
pending rows, value forms per the spec's mysqlType table, property round trips and fuzzing.

The only Simple messages published anywhere are the six of PingCAP's documentation page (vectors
README); the Avro case 25 was derived with fastavro from the schema. Both are used whole.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import io
import json
import re
from collections.abc import Iterable, Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdclake.errors import DecodeError, EncodeError, OptionError
from cdclake.formats import get_codec
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
from tests.conftest import VECTORS
from tests.fuzzing import mutations
from tests.strategies import TYPES, rows, values_of

JSON = get_codec("simple")
AVRO = get_codec("simple-avro")
CODECS = [pytest.param(JSON, id="json"), pytest.param(AVRO, id="avro")]
SIMPLE = VECTORS / "ticdc-simple"
CASES = VECTORS / "ticdc-cases"
DOCS_STREAM = SIMPLE / "docs-cn__ticdc-simple-protocol.jsonl"
SCHEMA_FILE = Path(__file__).resolve().parents[2] / "src" / "cdclake" / "formats" / "simple_avro_schema.json"

# The documentation's tables: simple.user before (version ...426) and after (...791) the ALTER.
USER_V1 = 447984074911121426
USER_V2 = 447987408682614791


def at(line: int) -> Origin:
    return Origin(topic="cdc", partition=0, offset=line)


def raw(value: bytes, offset: int = 0) -> RawMessage:
    return RawMessage(None, value, at(offset))


def docs_stream() -> list[bytes]:
    return DOCS_STREAM.read_bytes().splitlines()


def decode_all(codec: Codec, values: Iterable[bytes], **options: Any) -> list[list[Event]]:
    """Each value's events, one decoder for all (one partition), origins = line numbers."""
    decoder = codec.decoder(**options)
    return [decoder.decode(RawMessage(None, value, at(line))) for line, value in enumerate(values, 1)]


def encode(codec: Codec, events: Iterable[Event], **options: Any) -> list[bytes]:
    out = codec.encoder(**options).encode(events)
    assert all(message.key is None for message in out)  # TiCDC sends Simple messages without a key
    return [message.value or b"" for message in out]


def only(events: list[Event]) -> Any:
    assert len(events) == 1, events
    return events[0]


def case(name: str) -> dict[str, Any]:
    path = next(CASES.glob(f"{name}_*.json"))
    loaded: dict[str, Any] = json.loads(path.read_text())
    return loaded


def json_blocks() -> list[str]:
    text = (SIMPLE / "docs-cn__ticdc-simple-protocol__json-blocks.txt").read_text()
    return re.findall(r"```json\n(.*?)```", text, re.DOTALL)


# --- the documentation's messages: vectors/ticdc-simple ---------------------------------------------

USER_COLUMNS = [
    ("id", MySQLType("int", length=11), False),
    ("name", MySQLType("varchar", length=255), True),
    ("age", MySQLType("int", length=11), True),
    ("score", MySQLType("float", length=12), True),
]


def test_docs_stream_decodes_as_the_sidecar_says(vectors: Path) -> None:
    """docs-cn__ticdc-simple-protocol__EXPECTED.txt, line by line: kind, names, versions, commit ts,
    and every value typed by the cached schema (int, varchar, int, float)."""
    alter, insert, update, delete, watermark, bootstrap = (only(e) for e in decode_all(JSON, docs_stream()))

    assert isinstance(alter, Ddl)
    assert (alter.kind, alter.database, alter.table) == (DdlKind.ALTER_TABLE, "simple", "user")
    assert alter.sql == "ALTER TABLE `user` ADD COLUMN `createTime` TIMESTAMP"
    assert alter.commit_ts == 447987408682614795
    assert alter.meta == {"type": "ALTER", "buildTs": 1708936343598}
    assert alter.schema_after is not None and alter.schema_before is not None
    assert (alter.schema_after.version, alter.schema_before.version) == (USER_V2, USER_V1)
    assert [c.name for c in alter.schema_after.columns] == ["id", "name", "age", "score", "createTime"]
    assert alter.schema_after.column("createTime").type == MySQLType("timestamp", length=19, decimals=0)
    assert [(c.name, c.type, c.nullable) for c in alter.schema_before.columns] == USER_COLUMNS
    assert alter.schema_before.column("name").collation == "utf8mb4_bin"
    assert alter.schema_before.key_columns == ("id",)

    user = {"id": 1, "name": "John Doe", "age": 25}
    assert isinstance(insert, RowChange)
    assert (insert.op, insert.database, insert.table, insert.table_id) == (Op.INSERT, "simple", "user", 148)
    assert (insert.commit_ts, insert.schema_version) == (447984084414103554, USER_V1)
    assert (insert.before, insert.after) == (None, {**user, "score": 90.5})
    assert insert.key_columns == ("id",)
    assert dict(insert.types) == {name: mtype for name, mtype, _ in USER_COLUMNS}
    assert insert.meta == {"buildTs": 1708923662983}
    assert insert.origin == at(2)

    assert isinstance(update, RowChange) and update.op is Op.UPDATE
    assert update.commit_ts == 447984099186180098
    assert (update.before, update.after) == ({**user, "score": 90.5}, {**user, "score": 95.0})

    assert isinstance(delete, RowChange) and delete.op is Op.DELETE
    assert delete.commit_ts == 447984114259722243
    assert (delete.before, delete.after) == ({**user, "score": 95.0}, None)

    assert watermark == Watermark(447984124732375041, at(5), {"buildTs": 1708923816911})

    assert isinstance(bootstrap, Bootstrap)
    assert (bootstrap.schema.database, bootstrap.schema.table) == ("simple", "new_user")
    assert (bootstrap.schema.table_id, bootstrap.schema.version) == (148, USER_V1)
    assert [(c.name, c.type, c.nullable) for c in bootstrap.schema.columns] == USER_COLUMNS
    assert bootstrap.meta == {"buildTs": 1708924603278}


@pytest.mark.parametrize("line", range(6))
def test_docs_messages_re_encode_byte_for_byte(vectors: Path, line: int) -> None:
    """The jsonl holds the page's examples compacted, which is what Go's json.Marshal writes: decoding
    the stream and encoding each message's events gives the same bytes, field order included."""
    stream = docs_stream()
    decoder, encoder = JSON.decoder(), JSON.encoder()
    for value in stream[:line]:  # the ALTER before the rows brings their schema
        encoder.encode(decoder.decode(raw(value)))
    assert encoder.encode(decoder.decode(raw(stream[line])))[0].value == stream[line]


def test_verbatim_doc_blocks_decode_like_the_compact_stream(vectors: Path) -> None:
    """json-blocks.txt: the page's six pretty-printed message blocks give the same events as the jsonl,
    and encode to its compact bytes."""
    blocks = json_blocks()
    message_blocks = [b for b in blocks if '"type"' in b]
    assert len(message_blocks) == 6
    from_blocks = decode_all(JSON, (b.encode() for b in message_blocks))
    from_lines = decode_all(JSON, docs_stream())
    assert [_without_origin(e) for e in from_blocks] == [_without_origin(e) for e in from_lines]
    encoder = JSON.encoder()
    assert [encoder.encode(events)[0].value for events in from_blocks] == docs_stream()


def test_verbatim_schema_definitions_are_what_the_encoder_writes(vectors: Path) -> None:
    """The page's TableSchema, Column and Index definition blocks: the TableSchema block decodes (inside
    a BOOTSTRAP) to simple.user version ...426, and encoding that schema writes the definition blocks
    back with the same fields in the same order."""
    table_block, column_block, index_block = (json.loads(b) for b in json_blocks()[6:])
    bootstrap = {"version": 1, "type": "BOOTSTRAP", "commitTs": 0, "buildTs": 0, "tableSchema": table_block}
    schema = only(decode_all(JSON, [orjson.dumps(bootstrap)])[0]).schema
    assert (schema.database, schema.table, schema.table_id, schema.version) == ("simple", "user", 148, USER_V1)
    assert [(c.name, c.type, c.nullable) for c in schema.columns] == USER_COLUMNS

    written = orjson.loads(encode(JSON, [Bootstrap(schema, meta={"buildTs": 0})])[0])["tableSchema"]
    assert list(written.items()) == list(table_block.items())
    assert list(written["columns"][0].items()) == list(column_block.items())
    assert list(written["indexes"][0].items()) == list(index_block.items())


def test_shipped_avro_schema_is_tiflows_message_json(vectors: Path) -> None:
    assert SCHEMA_FILE.read_bytes() == (SIMPLE / "reference" / "tiflow__simple__message.json").read_bytes()


def _without_origin(events: list[Event]) -> list[Any]:
    return [dataclasses.replace(e, origin=None) for e in events]


# --- ticdc-cases 19-25 ------------------------------------------------------------------------------


def _case_value(name: str) -> bytes:
    return str(case(name)["kafka_value_utf8"]).encode()


def test_cases_19_to_23_decode_as_expected(vectors: Path) -> None:
    """19 (ALTER with preTableSchema) first, as a consumer reads it; then the rows 20-22, which name the
    pre-ALTER version, and the watermark 23. Compared: type, op, schema/table/tableID, commit ts, the
    (schema, table, version) looked up, before/after values."""
    alter, insert, update, delete, watermark = (
        only(events) for events in decode_all(JSON, [_case_value(n) for n in ("19", "20", "21", "22", "23")])
    )
    expected = case("19")["expected"]
    assert isinstance(alter, Ddl) and alter.meta["type"] == expected["ddl_type"]
    assert (alter.commit_ts, alter.sql) == (expected["commitTs"], expected["query"])
    assert alter.schema_after is not None and alter.schema_before is not None
    written = [[s.database, s.table, s.version] for s in (alter.schema_after, alter.schema_before)]
    assert written == expected["cache_writes"]

    expected = case("20")["expected"]
    assert isinstance(insert, RowChange) and insert.op.name == expected["op"]
    assert [insert.database, insert.table, insert.table_id] == [expected[k] for k in ("schema", "table", "tableID")]
    assert [insert.database, insert.table, insert.schema_version] == expected["lookup"]
    assert (insert.commit_ts, insert.after) == (expected["commitTs"], expected["after"])

    for row, name in ((update, "21"), (delete, "22")):
        expected = case(name)["expected"]
        assert isinstance(row, RowChange) and row.op.name == expected["op"]
        assert row.commit_ts == expected["commitTs"]
        assert row.before == expected["before"]
        assert row.after == expected.get("after")

    assert isinstance(watermark, Watermark) and watermark.ts == case("23")["expected"]["watermark"]


def test_case_19_caches_both_schemas(vectors: Path) -> None:
    """After the ALTER alone, rows of either version decode at once (no PendingRow)."""
    decoder = JSON.decoder()
    decoder.decode(raw(_case_value("19")))
    for version in (USER_V1, USER_V2):
        row = RowChange(Op.DELETE, "simple", "user", {"id": 7}, None, {}, commit_ts=9, schema_version=version)
        value = _encoded_row(row, [_user_schema(USER_V1), _user_schema(USER_V2, created=True)])
        assert isinstance(only(decoder.decode(raw(value))), RowChange)


def test_case_24_bootstrap_caches_its_table(vectors: Path) -> None:
    """The BOOTSTRAP brings simple.new_user (the page's example names another table than its rows, the
    vectors' README notes): it executes nothing, and rows of new_user — not user — decode after it."""
    expected = case("24")["expected"]
    decoder = JSON.decoder()
    bootstrap = only(decoder.decode(raw(_case_value("24"))))
    assert isinstance(bootstrap, Bootstrap)
    schema = bootstrap.schema
    assert [schema.database, schema.table, schema.version] == expected["cache_write"]
    new_user = RowChange(Op.INSERT, "simple", "new_user", None, {"id": 1}, {}, commit_ts=5, schema_version=USER_V1)
    user = dataclasses.replace(new_user, table="user")
    encoder = JSON.encoder()
    encoder.encode([Bootstrap(schema), Bootstrap(dataclasses.replace(schema, table="user"))])
    assert isinstance(only(decoder.decode(raw(encoder.encode([new_user])[0].value or b""))), RowChange)
    assert isinstance(only(decoder.decode(raw(encoder.encode([user])[0].value or b""))), PendingRow)


def test_case_25_avro_watermark(vectors: Path) -> None:
    """The DERIVED Avro watermark: union branch 11 (first byte 0x16), payload Watermark; it decodes to the
    documented values and encodes back to the same bytes."""
    entry = case("25")
    value = bytes.fromhex(entry["kafka_value_hex"])
    expected = entry["expected"]
    assert value[0] == 0x16
    watermark = only(decode_all(AVRO, [value])[0])
    assert watermark == Watermark(expected["commitTs"], at(1), {"buildTs": expected["buildTs"]})
    assert encode(AVRO, [watermark]) == [value]


@pytest.mark.parametrize("line", range(6))
def test_cases_19_to_24_re_encode_to_their_json(vectors: Path, line: int) -> None:
    """The cases hold the page's messages pretty-printed (kafka_value_utf8) and parsed
    (kafka_value_json): encoding the decoded events gives that JSON, with the fields in its order."""
    names = ["19", "20", "21", "22", "23", "24"]
    decoder, encoder = JSON.decoder(), JSON.encoder()
    for name in names[:line]:
        encoder.encode(decoder.decode(raw(_case_value(name))))
    written = encoder.encode(decoder.decode(raw(_case_value(names[line]))))[0].value or b""
    assert _ordered(json.loads(written)) == _ordered(case(names[line])["kafka_value_json"])


def _ordered(value: Any) -> Any:
    """JSON with each object's key order made part of what == compares."""
    if isinstance(value, dict):
        return [(key, _ordered(item)) for key, item in value.items()]
    if isinstance(value, list):
        return [_ordered(item) for item in value]
    return value


# --- the schema cache and pending rows --------------------------------------------------------------


def _user_schema(version: int, created: bool = False, table: str = "user") -> TableSchema:
    columns = [ColumnSchema(name, mtype, nullable) for name, mtype, nullable in USER_COLUMNS]
    if created:
        columns.append(ColumnSchema("createTime", MySQLType("timestamp", length=19, decimals=0)))
    primary = IndexSchema("primary", ("id",), unique=True, primary=True)
    return TableSchema("simple", table, tuple(columns), (primary,), table_id=148, version=version)


def _encoded_row(row: RowChange, schemas: list[TableSchema]) -> bytes:
    """A JSON DML message for ``row``, written by an encoder that has encoded ``schemas``."""
    encoder = JSON.encoder()
    encoder.encode(Bootstrap(schema) for schema in schemas)
    return encoder.encode([row])[0].value or b""


def test_rows_before_their_bootstrap_are_held_and_released_in_order() -> None:
    """A consumer joining mid-stream: the page's INSERT and UPDATE arrive before any schema, so each
    gives a PendingRow; the BOOTSTRAP of simple.user version ...426 returns itself, then both rows,
    decoded, in arrival order, with their own origins."""
    _, insert, update, *_ = docs_stream()
    decoder = JSON.decoder()
    assert decoder.decode(RawMessage(None, insert, at(1))) == [
        PendingRow("simple", "user", USER_V1, at(1), commit_ts=447984084414103554)]
    assert decoder.decode(RawMessage(None, update, at(2))) == [
        PendingRow("simple", "user", USER_V1, at(2), commit_ts=447984099186180098)]
    bootstrap = encode(JSON, [Bootstrap(_user_schema(USER_V1))])[0]
    released = decoder.decode(RawMessage(None, bootstrap, at(3)))
    assert [type(e) for e in released] == [Bootstrap, RowChange, RowChange]
    assert [(e.op, e.origin) for e in released[1:]] == [(Op.INSERT, at(1)), (Op.UPDATE, at(2))]
    assert released[2].after == {"id": 1, "name": "John Doe", "age": 25, "score": 95.0}
    # Released once: the next BOOTSTRAP returns only itself.
    assert [type(e) for e in decoder.decode(RawMessage(None, bootstrap, at(4)))] == [Bootstrap]


def test_rows_of_the_pre_ddl_version_decode_after_the_ddl() -> None:
    """The INSERT names the preTableSchema's version: held before the ALTER, released by it, and the
    UPDATE after the ALTER decodes at once."""
    alter, insert, update, *_ = docs_stream()
    decoder = JSON.decoder()
    assert isinstance(only(decoder.decode(raw(insert, 1))), PendingRow)
    ddl, row = decoder.decode(raw(alter, 2))
    assert isinstance(ddl, Ddl) and isinstance(row, RowChange) and row.schema_version == USER_V1
    assert isinstance(only(decoder.decode(raw(update, 3))), RowChange)


def test_a_schema_releases_only_its_own_rows() -> None:
    """The key is (database, table, version): a BOOTSTRAP of simple.new_user at the same version and
    table id leaves simple.user's rows held."""
    *_, bootstrap = docs_stream()
    insert = docs_stream()[1]
    decoder = JSON.decoder()
    decoder.decode(raw(insert, 1))
    assert [type(e) for e in decoder.decode(raw(bootstrap, 2))] == [Bootstrap]
    assert [type(e) for e in decoder.decode(raw(docs_stream()[0], 3))] == [Ddl, RowChange]


def test_rename_keeps_the_version_and_caches_both_names() -> None:
    """RENAME TABLE does not change the schema version (the zh page's note): its preTableSchema and
    tableSchema differ only in the table name, and rows of both names decode."""
    before, after = _user_schema(USER_V1), _user_schema(USER_V1, table="member")
    rename = Ddl(DdlKind.RENAME_TABLE, "simple", "member", "RENAME TABLE `user` TO `member`", 10, before, after)
    encoder = JSON.encoder()
    value = encoder.encode([rename])[0].value or b""
    assert orjson.loads(value)["type"] == "RENAME"
    decoder = JSON.decoder()
    ddl = only(decoder.decode(raw(value)))
    assert ddl.kind is DdlKind.RENAME_TABLE and ddl.schema_before and ddl.schema_after
    names = [(s.table, s.version) for s in (ddl.schema_before, ddl.schema_after)]
    assert names == [("user", USER_V1), ("member", USER_V1)]
    for table in ("user", "member"):
        row = RowChange(Op.INSERT, "simple", table, None, {"id": 3}, {}, commit_ts=11, schema_version=USER_V1)
        assert only(decoder.decode(raw(encoder.encode([row])[0].value or b""))).table == table


def test_a_held_row_that_does_not_fit_its_schema_is_reported_at_its_own_origin() -> None:
    """A held row whose values do not fit the schema that arrives: DecodeError naming the held message's
    origin; the BOOTSTRAP and the rows that fit are returned by the next call, in order."""
    good = docs_stream()[1]
    bad = good.replace(b'"age":"25"', b'"age":"twenty-five"')
    decoder = JSON.decoder()
    decoder.decode(RawMessage(None, bad, at(1)))
    decoder.decode(RawMessage(None, good, at(2)))
    bootstrap = encode(JSON, [Bootstrap(_user_schema(USER_V1))])[0]
    with pytest.raises(DecodeError) as error:
        decoder.decode(RawMessage(None, bootstrap, at(3)))
    assert error.value.origin == at(1)
    assert "at cdc[0]@3" in error.value.reason and "data.age" in error.value.reason
    watermark = docs_stream()[4]
    released = decoder.decode(RawMessage(None, watermark, at(4)))
    assert [(type(e), e.origin) for e in released] == [(Bootstrap, at(3)), (RowChange, at(2)), (Watermark, at(4))]


# --- values as the spec's mysqlType table carries them ----------------------------------------------

ALL_TYPES = TableSchema(
    "db",
    "all",
    (
        ColumnSchema("id", MySQLType("bigint", unsigned=True, length=20), nullable=False),
        ColumnSchema("ts", MySQLType("timestamp", decimals=3)),
        ColumnSchema("blob", MySQLType("blob")),
        ColumnSchema("text", MySQLType("text")),
        ColumnSchema("bits", MySQLType("bit", length=64)),
        ColumnSchema("color", MySQLType("enum", elements=("red", "green"))),
        ColumnSchema("tags", MySQLType("set", elements=("a", "b", "c"))),
        ColumnSchema("price", MySQLType("decimal", length=65, decimals=30)),
        ColumnSchema("ratio", MySQLType("float")),
    ),
    (IndexSchema("primary", ("id",), unique=True, primary=True),),
    table_id=7,
    version=100,
)


def _decode_json_row(data: dict[str, Any], **options: Any) -> RowChange:
    decoder = JSON.decoder(**options)
    decoder.decode(raw(encode(JSON, [Bootstrap(ALL_TYPES)])[0]))
    message = {"version": 1, "database": "db", "table": "all", "tableID": 7, "type": "INSERT", "commitTs": 5,
               "buildTs": 1, "schemaVersion": 100, "data": data}
    row = only(decoder.decode(raw(orjson.dumps(message))))
    assert isinstance(row, RowChange)
    return row


def test_json_values_per_the_mysql_type_table() -> None:
    """Strings everywhere; TIMESTAMP an object with its location (wall clock there → UTC instant);
    binary strings base64, text plain; BIT a decimal uint64; ENUM/SET the index/bitmask, read as the
    members the schema lists; bigint unsigned up to 2**64-1; decimal(65,30) exact; NULL vs "null"."""
    row = _decode_json_row({
        "id": "18446744073709551615",
        "ts": {"location": "Asia/Shanghai", "value": "2024-01-01 08:00:00.125"},
        "blob": base64.b64encode(bytes(range(256))).decode(),
        "text": "null",
        "bits": "18446744073709551615",
        "color": "2",
        "tags": "5",
        "price": "-12345678901234567890123456789012345.123456789012345678901234567890",
        "ratio": None,
    })
    assert row.after == {
        "id": 2**64 - 1,
        "ts": dt.datetime(2024, 1, 1, 0, 0, 0, 125000, tzinfo=dt.UTC),
        "blob": bytes(range(256)),
        "text": "null",
        "bits": 2**64 - 1,
        "color": "green",
        "tags": "a,c",
        "price": Decimal("-12345678901234567890123456789012345.123456789012345678901234567890"),
        "ratio": None,
    }


def test_json_numbers_are_read_too() -> None:
    """pingcap/ticdc's encoder writes integers, BIT/ENUM/SET and floats as JSON numbers (tiflow and the
    page write strings): both read the same; a number is never taken for a string column."""
    row = _decode_json_row({"id": 18446744073709551615, "bits": 5, "color": 1, "tags": 3, "ratio": 0.5})
    assert row.after == {"id": 2**64 - 1, "bits": 5, "color": "red", "tags": "a,b", "ratio": 0.5}
    with pytest.raises(DecodeError, match=r"data\.text"):
        _decode_json_row({"text": 5})


def test_local_location_means_the_tz_option() -> None:
    """TiCDC running in its system zone writes location "Local", which names no zone: the tz option does."""
    row = _decode_json_row({"ts": {"location": "Local", "value": "2024-01-01 08:00:00"}}, tz="+08:00")
    assert row.after == {"ts": dt.datetime(2024, 1, 1, tzinfo=dt.UTC)}


def test_timestamp_is_written_in_the_tz_option_with_its_location() -> None:
    instant = dt.datetime(2024, 1, 1, 0, 0, 0, 125000, tzinfo=dt.UTC)
    row = RowChange(Op.INSERT, "db", "all", None, {"id": 1, "ts": instant}, {}, commit_ts=1 << 20)
    written = orjson.loads(encode(JSON, [Bootstrap(ALL_TYPES), row], tz="Asia/Shanghai")[1])
    assert written["data"]["ts"] == {"location": "Asia/Shanghai", "value": "2024-01-01 08:00:00.125"}
    assert written["buildTs"] == 4  # no meta: the commit's physical time, commitTs >> 18


def _avro_datum(value: bytes) -> Any:
    schema = fastavro.parse_schema(json.loads(SCHEMA_FILE.read_text()))
    return fastavro.schemaless_reader(io.BytesIO(value), schema, None, return_record_name=True)


def test_avro_values_take_the_union_branches_tiflow_writes() -> None:
    """Every Avro value is a datum of the Message branch (first byte 0x16); bigint unsigned is an
    UnsignedBigint holding the int64 bits, BIT a long (two's complement past 2**63-1), ENUM/SET longs,
    FLOAT a float, binary bytes, TIMESTAMP a Timestamp record."""
    after = {"id": 2**64 - 1, "ts": dt.datetime(2024, 1, 1, tzinfo=dt.UTC), "blob": b"\x00\xff", "bits": 2**63,
             "color": "red", "tags": "b", "ratio": 0.5}
    row = RowChange(Op.INSERT, "db", "all", None, after, {}, commit_ts=9)
    bootstrap, value = encode(AVRO, [Bootstrap(ALL_TYPES), row])
    assert bootstrap[0] == value[0] == 0x16
    name, message = _avro_datum(value)
    assert (name, message["type"]) == ("com.pingcap.simple.avro.Message", "DML")
    data = message["payload"][1]["data"]
    assert data["id"] == ("com.pingcap.simple.avro.UnsignedBigint", {"value": -1})
    assert data["ts"] == ("com.pingcap.simple.avro.Timestamp", {"location": "UTC", "value": "2024-01-01 00:00:00.000"})
    assert [data[k] for k in ("bits", "color", "tags", "ratio", "blob")] == [-(2**63), 1, 2, 0.5, b"\x00\xff"]
    assert only(decode_all(AVRO, [bootstrap, value])[1]).after == after


@pytest.mark.parametrize(
    ("branch", "expected"),
    [
        # The spec's table: bigint unsigned past 2**63-1 as a string; tiflow: a plain long; ticdc: BIT as a string.
        ({"id": ("string", "18446744073709551615"), "bits": ("string", "7")}, {"id": 2**64 - 1, "bits": 7}),
        ({"id": ("long", -2), "bits": ("long", -1)}, {"id": 2**64 - 2, "bits": 2**64 - 1}),
    ],
)
def test_avro_reads_every_form_producers_write(branch: dict[str, Any], expected: dict[str, Any]) -> None:
    schema = fastavro.parse_schema(json.loads(SCHEMA_FILE.read_text()))
    payload = {"version": 1, "database": "db", "table": "all", "tableID": 7, "type": "INSERT", "commitTs": 5,
               "buildTs": 1, "schemaVersion": 100, "claimCheckLocation": None, "handleKeyOnly": None,
               "checksum": None, "data": branch, "old": None}
    buffer = io.BytesIO()
    datum = ("com.pingcap.simple.avro.Message", {"type": "DML", "payload": ("com.pingcap.simple.avro.DML", payload)})
    fastavro.schemaless_writer(buffer, schema, datum)
    bootstrap = encode(AVRO, [Bootstrap(ALL_TYPES)])[0]
    assert only(decode_all(AVRO, [bootstrap, buffer.getvalue()])[1]).after == expected


@pytest.mark.parametrize("codec", CODECS)
def test_large_message_refs_round_trip(codec: Codec) -> None:
    """handleKeyOnly → LargeMessageRef(HANDLE_KEY_ONLY); claimCheckLocation (TiCDC sets handleKeyOnly too)
    → CLAIM_CHECK with the location, checked first. Only the handle key came; held like any row."""
    key_only = RowChange(Op.DELETE, "db", "all", {"id": 5}, None, {}, commit_ts=7, schema_version=100)
    refs = [
        LargeMessageRef(LargeMessageKind.HANDLE_KEY_ONLY, key_only),
        LargeMessageRef(LargeMessageKind.CLAIM_CHECK, key_only, "s3:/claim-check-bucket/1b2c.json"),
    ]
    values = encode(codec, [Bootstrap(ALL_TYPES), *refs])
    decoder = codec.decoder()
    assert [type(e) for e in decoder.decode(raw(values[1]))] == [PendingRow]
    _, held = decoder.decode(raw(values[0]))
    claim = only(decoder.decode(raw(values[2])))
    assert isinstance(held, LargeMessageRef) and isinstance(claim, LargeMessageRef)
    assert (held.kind, held.location, held.row.before) == (LargeMessageKind.HANDLE_KEY_ONLY, None, {"id": 5})
    assert (claim.kind, claim.location) == (LargeMessageKind.CLAIM_CHECK, "s3:/claim-check-bucket/1b2c.json")
    if codec is JSON:
        assert orjson.loads(values[2])["handleKeyOnly"] is True
    assert encode(codec, [Bootstrap(ALL_TYPES), held, claim])[1:] == values[1:]


@pytest.mark.parametrize("codec", CODECS)
def test_checksum_is_kept_in_meta_and_written_back(codec: Codec) -> None:
    checksum = {"version": 1, "corrupted": False, "current": 4294967295, "previous": 0}
    row = RowChange(Op.INSERT, "db", "all", None, {"id": 1}, {}, commit_ts=7, meta={"buildTs": 3, "checksum": checksum})
    values = encode(codec, [Bootstrap(ALL_TYPES), row])
    decoded = only(decode_all(codec, values)[1])
    assert decoded.meta == {"buildTs": 3, "checksum": checksum}
    assert encode(codec, [Bootstrap(ALL_TYPES), decoded]) == values


@pytest.mark.parametrize(
    ("ddl_type", "sql", "kind"),
    [
        ("CREATE", "CREATE TABLE t (id int)", DdlKind.CREATE_TABLE),
        ("ERASE", "DROP TABLE t", DdlKind.DROP_TABLE),
        ("TRUNCATE", "TRUNCATE TABLE t", DdlKind.TRUNCATE_TABLE),
        ("CINDEX", "ALTER TABLE t ADD INDEX i (a)", DdlKind.CREATE_INDEX),
        ("DINDEX", "DROP INDEX i ON t", DdlKind.DROP_INDEX),
        ("QUERY", "CREATE DATABASE `shop`", DdlKind.CREATE_DATABASE),
        ("QUERY", "/* x */ drop schema if exists shop", DdlKind.DROP_DATABASE),
        ("QUERY", "CREATE VIEW v AS SELECT 1", DdlKind.OTHER),
    ],
)
@pytest.mark.parametrize("codec", CODECS)
def test_ddl_types_and_kinds(codec: Codec, ddl_type: str, sql: str, kind: DdlKind) -> None:
    """The message type decides the kind; QUERY's SQL tells database DDL apart. A DDL without any table
    schema (DROP DATABASE) names no table. Encoding a Ddl without meta derives the type from its kind."""
    ddl = Ddl(kind, "", "", sql, commit_ts=1 << 30)
    decoded = only(decode_all(codec, encode(codec, [ddl]))[0])
    assert (decoded.kind, decoded.meta["type"], decoded.sql) == (kind, ddl_type, sql)
    assert (decoded.database, decoded.table, decoded.schema_after) == ("", "", None)


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
    decoder.decode(raw(encode(JSON, [Bootstrap(_user_schema(USER_V1))])[0]))
    origin = Origin(topic="cdc", partition=2, offset=99)
    with pytest.raises(DecodeError) as error:
        decoder.decode(RawMessage(None, value, origin))
    assert (error.value.format_name, error.value.origin) == ("simple", origin)
    assert reason in error.value.reason
    assert str(origin) in str(error.value)


def test_bad_timestamp_location() -> None:
    with pytest.raises(DecodeError, match="unknown time zone 'Mars/Base'"):
        _decode_json_row({"ts": {"location": "Mars/Base", "value": "2024-01-01 00:00:00"}})


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


def _fuzz_seeds(codec: Codec) -> list[bytes]:
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
        seeds += docs_stream() + [_case_value(n) for n in ("19", "20", "21", "22", "23", "24")]
    else:
        seeds.append(bytes.fromhex(case("25")["kafka_value_hex"]))
    return seeds


@pytest.mark.parametrize("codec", CODECS)
def test_fuzzed_messages_raise_only_decode_error(codec: Codec) -> None:
    """10,000 mutants per encoding, fed to decoders that know the seeds' schemas (so the mutants reach
    the values): each decodes or raises DecodeError, nothing else."""
    seeds = _fuzz_seeds(codec)
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
                20, _user_schema(USER_V1), _user_schema(USER_V2, created=True))
    row = RowChange(Op.INSERT, "simple", "user", None, {"id": 1, "createTime": None}, {}, commit_ts=21)
    events = decode_all(codec, encode(codec, [alter, row]))
    assert only(events[1]).schema_version == USER_V2


# --- the decoder's fast paths agree with its careful readers -------------------------------------

FAST_PATH_INPUTS: list[Any] = [
    None, True, False, 0, 1, -1, 5, 2**63, 2**64, -(2**63) - 1, 1.5, float("nan"), [], {}, [1], "", " ", "x",
    "0", "1", "-1", "+1", " 12 ", "1_000", "１２", "²", "3.25", "-0.0", "1e3", "NaN", "Infinity", "-inf", "inf",
    "18446744073709551615", "18446744073709551616", "9223372036854775808", "-9223372036854775809",
    "2024-01-15", "2024-00-15", "0000-00-00", "2024-02-30", "2024W011", "20240115", "2024-1-15", "２024-01-15",
    "2024-01-15 08:00:00", "2024-01-15 08:00:00.5", "2024-01-15 08:00:00.123456", "2024-01-15 08:00:00.1234567",
    "2024-01-15T08:00:00", "2024-01-15 08:00:00+01:00", "2024-01-15 08:00:00.12+01", "2024-01-15 08:00:00,5",
    "0000-00-00 00:00:00", "2024-02-30 08:00:00", "2024-01-15 24:00:00", "2024-01-15 08:00:00.",
    "08:00:00", "08:00:00.1", "08:00:00.123456789", "08:00:00.1234567890", "99:99:99", "-08:00:00", "100:00:00",
    "8:00:00", "08:00:00.", "08:00:0a", "０8:00:00", "08:00:00 ", "+8:00:00", "08:00:00.1_2", "1_:00:00",
    "08:+0:00", "08:00:00.-1", "-00:00:00", "-00:00:00.000000", "-0:00:00.5", "005:07:09.25", "-838:59:59.000001",
    "999:59:59", "1000:00:00", "AAEC/w==", "AAEC/w=", "AAEC /w==", "AAEC-w==", "é", "null", "5,3",
    {"location": "UTC", "value": "2024-01-15 08:00:00.125"},
    {"location": "Asia/Shanghai", "value": "2024-01-15 08:00:00"},
    {"location": "Local", "value": "0000-00-00 00:00:00"},
    {"location": "UTC", "value": "2024-01-15T08:00:00"},
    {"location": "UTC", "value": "2024-01-15 08:00:00+01:00"},
    {"location": "UTC", "value": 5},
    {"location": 5, "value": "2024-01-15 08:00:00"},
    {"location": ["UTC"], "value": "2024-01-15 08:00:00"},
    {"value": "2024-01-15 08:00:00"},
    {"location": "UTC"},
    {"location": "Mars/Base", "value": "2024-01-15 08:00:00"},
]  # fmt: skip
FAST_PATH_TYPES = [
    "bigint", "bigint unsigned", "tinyint", "int unsigned", "year", "bit(1)", "bit(64)", "float", "double",
    "decimal(10,2)", "varchar(10)", "json", "binary(4)", "enum('a','b')", "enum", "set('a','b','c')", "set",
    "date", "datetime(6)", "timestamp(3)", "time(3)", "enum('{v}','}','x''y','\\\\')",
]  # fmt: skip


def _outcome(read: Any, raw: Any) -> Any:
    from cdclake.formats.simple.values import READ_ERRORS

    try:
        value = read(raw)
    except READ_ERRORS:
        return "fails"
    return type(value), repr(value)


@pytest.mark.parametrize("type_text", FAST_PATH_TYPES)
def test_fast_readers_take_and_return_exactly_what_the_careful_readers_do(type_text: str) -> None:
    """Every fast reader, and its inline form in a compiled image reader, against the careful reader:
    the same value of the same type, or both fail."""
    from cdclake.formats.simple.decoder import _compile_plan
    from cdclake.formats.simple.fast_path import json_fast_reader, json_inline
    from cdclake.formats.simple.values import Zones, json_reader

    mtype = MySQLType.parse(type_text)
    zones = Zones(dt.timezone(dt.timedelta(hours=2)))
    careful, fast = json_reader(mtype, zones), json_fast_reader(mtype, zones)
    plan = _compile_plan(("c",), {"c": fast}, {"c": json_inline(mtype)})
    for raw in FAST_PATH_INPUTS:
        if raw is None:
            continue
        expected = _outcome(careful, raw)
        assert _outcome(fast, raw) == expected, raw
        assert _outcome(lambda r: plan({"c": r})["c"], raw) == expected, raw


def _all_types_image() -> dict[str, Any]:
    return {
        "id": "18446744073709551615",
        "ts": {"location": "Asia/Shanghai", "value": "2024-01-01 08:00:00.125"},
        "blob": base64.b64encode(b"\x00\xff").decode(),
        "text": "x",
        "bits": "3",
        "color": "2",
        "tags": "5",
        "price": "1.5",
        "ratio": "0.5",
    }


def test_whole_images_in_any_column_order_read_alike() -> None:
    """A whole image takes a reader compiled for its column order: every order (more than are
    compiled) reads to the same values, in the image's own order."""
    expected = _decode_json_row(_all_types_image()).after
    assert expected is not None
    names = list(_all_types_image())
    for shift in range(len(names)):
        for order in (names[shift:] + names[:shift], (names[shift:] + names[:shift])[::-1]):
            data = {name: _all_types_image()[name] for name in order}
            after = _decode_json_row(data).after
            assert after == expected and list(after or ()) == order
            assert all(type(after[k]) is type(expected[k]) for k in order) if after else False


@pytest.mark.parametrize(
    ("column", "value", "reason"),
    [
        ("id", "x1", "data.id (bigint(20) unsigned): 'x1' does not fit"),
        ("id", "-1", "data.id (bigint(20) unsigned): '-1' does not fit: -1 outside the range"),
        ("text", 5, "data.text (text): 5 does not fit: expected a string, got int"),
        ("price", "NaN", "data.price (decimal(65,30)): 'NaN' does not fit: not a finite decimal"),
        ("bits", 1.5, "data.bits (bit(64)): 1.5 does not fit"),
        ("blob", "AA=", "data.blob (blob): 'AA=' does not fit"),
        ("ts", {"location": "UTC", "value": "2024-13-01 00:00:00"}, "data.ts (timestamp(3))"),
    ],
)
def test_a_whole_image_that_does_not_fit_names_its_column_and_reason(column: str, value: Any, reason: str) -> None:
    data = _all_types_image()
    data[column] = value
    with pytest.raises(DecodeError) as error:
        _decode_json_row(data)
    assert reason in error.value.reason
