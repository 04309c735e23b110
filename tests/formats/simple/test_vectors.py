"""Simple protocol: every vector of vectors/ticdc-simple/ (the six messages of PingCAP's documentation page,
the only Simple messages published anywhere) and the Simple cases 19-25 of vectors/ticdc-cases/ (the
Avro case 25 derived with fastavro from the schema), decoded and encoded back, used whole."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from cdclake.model import Bootstrap, Ddl, DdlKind, Event, Op, PendingRow, RowChange, Watermark
from cdclake.types import MySQLType
from tests.formats.simple.helpers import (
    AVRO,
    JSON,
    SCHEMA_FILE,
    SIMPLE,
    USER_COLUMNS,
    USER_V1,
    USER_V2,
    at,
    case,
    case_value,
    decode_all,
    docs_stream,
    encode,
    encoded_row,
    json_blocks,
    only,
    raw,
    user_schema,
)

# --- the documentation's messages: vectors/ticdc-simple ---------------------------------------------


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


def test_cases_19_to_23_decode_as_expected(vectors: Path) -> None:
    """19 (ALTER with preTableSchema) first, as a consumer reads it; then the rows 20-22, which name the
    pre-ALTER version, and the watermark 23. Compared: type, op, schema/table/tableID, commit ts, the
    (schema, table, version) looked up, before/after values."""
    alter, insert, update, delete, watermark = (
        only(events) for events in decode_all(JSON, [case_value(n) for n in ("19", "20", "21", "22", "23")])
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
    decoder.decode(raw(case_value("19")))
    for version in (USER_V1, USER_V2):
        row = RowChange(Op.DELETE, "simple", "user", {"id": 7}, None, {}, commit_ts=9, schema_version=version)
        value = encoded_row(row, [user_schema(USER_V1), user_schema(USER_V2, created=True)])
        assert isinstance(only(decoder.decode(raw(value))), RowChange)


def test_case_24_bootstrap_caches_its_table(vectors: Path) -> None:
    """The BOOTSTRAP brings simple.new_user (the page's example names another table than its rows, the
    vectors' README notes): it executes nothing, and rows of new_user — not user — decode after it."""
    expected = case("24")["expected"]
    decoder = JSON.decoder()
    bootstrap = only(decoder.decode(raw(case_value("24"))))
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
        encoder.encode(decoder.decode(raw(case_value(name))))
    written = encoder.encode(decoder.decode(raw(case_value(names[line]))))[0].value or b""
    assert _ordered(json.loads(written)) == _ordered(case(names[line])["kafka_value_json"])


def _ordered(value: Any) -> Any:
    """JSON with each object's key order made part of what == compares."""
    if isinstance(value, dict):
        return [(key, _ordered(item)) for key, item in value.items()]
    if isinstance(value, list):
        return [_ordered(item) for item in value]
    return value
