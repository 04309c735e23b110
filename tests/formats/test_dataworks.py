"""The DataWorks JSON codec against Apache Paimon's aliyun-json samples, the spec's own examples, property
round trips, update-pair handling, bad input and fuzzing.

The spec is /work/shared/specs/dataworks-kafka-message-format.en.txt (Alibaba Cloud's "Appendix: Message
format"); its examples are written out below as literals, one per test, comments and elisions removed.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import json
import math
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdclake.errors import DecodeError, EncodeError, OptionError
from cdclake.eventjson import event_from_json, event_to_json
from cdclake.formats import get_codec
from cdclake.formats.dataworks.values import dataworks_type
from cdclake.formats.dataworks.wire import MYSQL_TYPE_OF, ddl_kind
from cdclake.model import (
    Bootstrap,
    ColumnSchema,
    Ddl,
    DdlKind,
    Event,
    Heartbeat,
    LargeMessageKind,
    LargeMessageRef,
    Op,
    Origin,
    RawMessage,
    RowChange,
    TableSchema,
    Transaction,
    TransactionMark,
    Watermark,
)
from cdclake.types import Family, MySQLType, ZeroTemporal, value_from_text, zone
from tests.fuzzing import mutations
from tests.strategies import TYPES, rows

CODEC = get_codec("dataworks")
UTC = dt.UTC


def message(value: bytes | str | None, offset: int = 0) -> RawMessage:
    data = value.encode() if isinstance(value, str) else value
    return RawMessage(key=None, value=data, origin=Origin("dw", 0, offset))


def decode(*values: bytes | str, **options: Any) -> list[Event]:
    """Every event of the messages, decoded in order by one decoder, with a held half flushed at the end."""
    decoder = CODEC.decoder(**options)
    events = [event for offset, value in enumerate(values) for event in decoder.decode(message(value, offset))]
    return events + decoder.flush()


def encode(events: list[Event], **options: Any) -> list[Any]:
    """The encoded messages as parsed JSON (by the stdlib: orjson reads integers past 64 bits as floats)."""
    return [json.loads(m.value) for m in CODEC.encoder(**options).encode(events)]


def at_ms(ms: int) -> dt.datetime:
    return dt.datetime(1970, 1, 1, tzinfo=UTC) + dt.timedelta(milliseconds=ms)


# --- Apache Paimon's aliyun-json samples (the only public DataWorks messages) --------------------------

ALIYUN = "aliyun"
VECTOR_FILES = (
    "paimon__aliyun__table__event__event-insert.txt",
    "paimon__aliyun__table__event__event-update-in-one.txt",
    "paimon__aliyun__table__event__event-delete.txt",
)


def vector_json(vectors: Path, name: str) -> bytes:
    """The file's one message. Like Paimon's test, keep the line that parses as JSON (the files start with a
    licence comment, and the update file's JSON line starts with a space)."""
    lines = [line for line in (vectors / ALIYUN / name).read_bytes().splitlines() if line.strip().startswith(b"{")]
    assert len(lines) == 1
    return lines[0]


def test_every_aliyun_vector_is_tested(vectors: Path) -> None:
    messages = {p.name for p in (vectors / ALIYUN).iterdir() if "EXPECTED" not in p.name}
    assert messages == set(VECTOR_FILES)


SYNC_TEST_TYPES = {
    "id": MySQLType("bigint"),
    "val": MySQLType("double"),
    "name": MySQLType("longtext"),
    "create_time": MySQLType("timestamp", decimals=3),
}


# What paimon__aliyun__EXPECTED.txt says Paimon's AliyunJsonRecordParserTest asserts: the row kind, the image
# it is built from, primary keys [id], database bigdata_test, table sync_test_table, and a positive timestamp
# (Paimon's MessageQueueCdcTimestampExtractor reads payload.timestamp.systemTime). We also compare every value
# and type, and the ordering fields kept in meta. DOUBLE: the spec's table says a JSON number, these real
# messages send the decimal text "1.100000" — both decode to the float; the text stays in meta["doubleText"].
@pytest.mark.parametrize(
    ("name", "op", "before", "after", "sequence_id", "system_time"),
    [
        (
            VECTOR_FILES[0],
            Op.INSERT,
            None,
            {"id": 2, "val": 1.1, "name": "a", "create_time": at_ms(1731661114000)},
            "-1",
            1731661820245,
        ),
        (
            VECTOR_FILES[1],
            Op.UPDATE,
            {"id": 2, "val": 1.1, "name": "a", "create_time": at_ms(1731661114000)},
            {"id": 2, "val": 2.2, "name": "a", "create_time": at_ms(1731661114000)},
            "1731663842292000001",
            1731663848979,
        ),
        (
            VECTOR_FILES[2],
            Op.DELETE,
            {"id": 1, "val": 1.1, "name": "a", "create_time": at_ms(1731661114000)},
            None,
            "1731663842292000000",
            1731663848953,
        ),
    ],
)
def test_aliyun_vector_decodes_as_expected(
    vectors: Path, name: str, op: Op, before: Any, after: Any, sequence_id: str, system_time: int
) -> None:
    (row,) = decode(vector_json(vectors, name))
    assert isinstance(row, RowChange)
    assert (row.op, row.database, row.table, row.key_columns) == (op, "bigdata_test", "sync_test_table", ("id",))
    assert (row.before, row.after) == (before, after)
    assert dict(row.types) == SYNC_TEST_TYPES
    assert row.commit_ts is None
    assert row.meta["sequenceId"] == sequence_id
    assert row.meta["timestamp"]["systemTime"] == system_time > 0
    assert row.meta["source"]["dbType"] == "MySQL"
    assert "unpaired" not in row.meta


def test_aliyun_vector_double_text_is_kept(vectors: Path) -> None:
    (row,) = decode(vector_json(vectors, VECTOR_FILES[1]))
    assert row.meta["doubleText"] == {"before": {"val": "1.100000"}, "after": {"val": "2.200000"}}


@pytest.mark.parametrize("name", VECTOR_FILES)
def test_aliyun_vector_reencodes_to_itself(vectors: Path, name: str) -> None:
    original = vector_json(vectors, name)
    assert encode(decode(original), one_record_per_update=True) == [orjson.loads(original)]


# --- the spec's examples -------------------------------------------------------------------------------

SPEC_SCHEMA = (
    '"schema":{"dataColumn":[{"name":"name","type":"STRING"},{"name":"job","type":"STRING"},'
    '{"name":"sex","type":"STRING"},{"name":"#alibaba_rds_row_id#","type":"LONG"}],"primaryKey":null,'
    '"source":{"dbType":"MySQL","dbName":"pkset_test","tableName":"pkset_test_no_pk"}}'
)
SPEC_HEARTBEAT = (
    '{"schema":{"dataColumn":null,"primaryKey":null,"source":null},"payload":{"before":null,"after":null,'
    '"sequenceId":null,"timestamp":{"eventTime":1620457659000,"checkpointTime":1620457659000},'
    '"op":"MHEARTBEAT","ddl":null},"version":"0.0.1"}'
)
SPEC_INSERT = (
    "{" + SPEC_SCHEMA + ',"payload":{"before":null,"after":{"dataColumn":{"name":"name11","job":"job11",'
    '"sex":"man","#alibaba_rds_row_id#":15}},"sequenceId":"1620457642589000000","timestamp":'
    '{"eventTime":1620457896000,"systemTime":1620457896977,"checkpointTime":1620457896000},"op":"INSERT",'
    '"ddl":null},"version":"0.0.1"}'
)
SPEC_UPDATE_BEFORE = (
    "{" + SPEC_SCHEMA + ',"payload":{"before":{"dataColumn":{"name":"name11","job":"job11","sex":"man",'
    '"#alibaba_rds_row_id#":15}},"after":null,"sequenceId":"1620457642589000001","timestamp":'
    '{"eventTime":1620458077000,"systemTime":1620458077779,"checkpointTime":1620458077000},'
    '"op":"UPDATE_BEFOR","ddl":null},"version":"0.0.1"}'
)
SPEC_UPDATE_AFTER = (
    "{" + SPEC_SCHEMA + ',"payload":{"before":null,"after":{"dataColumn":{"name":"name11","job":"job11",'
    '"sex":"woman","#alibaba_rds_row_id#":15}},"sequenceId":"1620457642589000001","timestamp":'
    '{"eventTime":1620458077000,"systemTime":1620458077779,"checkpointTime":1620458077000},'
    '"op":"UPDATE_AFTER","ddl":null},"version":"0.0.1"}'
)
SPEC_UPDATE_IN_ONE = (
    "{" + SPEC_SCHEMA + ',"payload":{"before":{"dataColumn":{"name":"name11","job":"job11","sex":"man",'
    '"#alibaba_rds_row_id#":15}},"after":{"dataColumn":{"name":"name11","job":"job11","sex":"woman",'
    '"#alibaba_rds_row_id#":15}},"sequenceId":"1620457642589000001","timestamp":{"eventTime":1620458077000,'
    '"systemTime":1620458077779,"checkpointTime":1620458077000},"op":"UPDATE_AFTER","ddl":null},'
    '"version":"0.0.1"}'
)
SPEC_DELETE = (
    "{" + SPEC_SCHEMA + ',"payload":{"before":{"dataColumn":{"name":"name11","job":"job11","sex":"woman",'
    '"#alibaba_rds_row_id#":15}},"after":null,"sequenceId":"1620457642589000002","timestamp":'
    '{"eventTime":1620458266000,"systemTime":1620458266101,"checkpointTime":1620458266000},"op":"DELETE",'
    '"ddl":null},"version":"0.0.1"}'
)
# The spec's "overall message format", made a real message: its op list and ddl placeholder replaced by an
# update in one message, "[base64 string]" by real base64. It shows BYTES, DATE, an Oracle rowid column,
# scn, dbVersion and schemaName.
SPEC_OVERALL = (
    '{"schema":{"dataColumn":[{"name":"id","type":"LONG"},{"name":"name","type":"STRING"},'
    '{"name":"binData","type":"BYTES"},{"name":"ts","type":"DATE"},{"name":"rowid","type":"STRING"}],'
    '"primaryKey":["pkName1","pkName2"],"source":{"dbType":"mysql","dbVersion":"1.0.0","dbName":"myDatabase",'
    '"schemaName":"mySchema","tableName":"tableName"}},"payload":{"before":{"dataColumn":{"id":111,'
    '"name":"scooter","binData":"AAH/","ts":1590315269000,"rowid":"AAIUMPAAFAACxExAAE"}},"after":{"dataColumn":'
    '{"id":222,"name":"donald","binData":"3q2+7w==","ts":1590315269000,"rowid":"AAIUMPAAFAACxExAAE"}},'
    '"sequenceId":"XXX","scn":"xxxx","op":"UPDATE_AFTER","timestamp":{"eventTime":1,"systemTime":2,'
    '"checkpointTime":3},"ddl":null},"version":"1.0.0"}'
)
SPEC_TYPES = {name: MySQLType("longtext") for name in ("name", "job", "sex")} | {
    "#alibaba_rds_row_id#": MySQLType("bigint")
}
ROW_11 = {"name": "name11", "job": "job11", "#alibaba_rds_row_id#": 15}


def test_spec_heartbeat() -> None:
    (event,) = decode(SPEC_HEARTBEAT)
    assert isinstance(event, Heartbeat)
    assert event.ts_ms == 1620457659000
    assert event.meta["timestamp"] == {"eventTime": 1620457659000, "checkpointTime": 1620457659000}
    assert encode([event]) == [orjson.loads(SPEC_HEARTBEAT)]


def test_spec_insert() -> None:
    (row,) = decode(SPEC_INSERT)
    assert isinstance(row, RowChange)
    assert (row.op, row.database, row.table) == (Op.INSERT, "pkset_test", "pkset_test_no_pk")
    assert (row.before, row.after) == (None, ROW_11 | {"sex": "man"})
    assert row.key_columns == ()  # primaryKey null: a table without one
    assert dict(row.types) == SPEC_TYPES
    assert row.meta["sequenceId"] == "1620457642589000000"
    assert encode([row]) == [orjson.loads(SPEC_INSERT)]


def test_spec_update_pair_decodes_to_one_update_and_reencodes_as_the_pair() -> None:
    (row,) = decode(SPEC_UPDATE_BEFORE, SPEC_UPDATE_AFTER)
    assert isinstance(row, RowChange)
    assert row.op is Op.UPDATE
    assert (row.before, row.after) == (ROW_11 | {"sex": "man"}, ROW_11 | {"sex": "woman"})
    assert row.origin == Origin("dw", 0, 1)  # the message that completed it
    assert row.meta["updateBefore"]["op"] == "UPDATE_BEFOR"
    assert "unpaired" not in row.meta
    assert encode([row]) == [orjson.loads(SPEC_UPDATE_BEFORE), orjson.loads(SPEC_UPDATE_AFTER)]


def test_spec_update_in_one_message() -> None:
    (row,) = decode(SPEC_UPDATE_IN_ONE)
    assert isinstance(row, RowChange)
    assert (row.op, row.before, row.after) == (Op.UPDATE, ROW_11 | {"sex": "man"}, ROW_11 | {"sex": "woman"})
    assert encode([row], one_record_per_update=True) == [orjson.loads(SPEC_UPDATE_IN_ONE)]
    (paired,) = decode(SPEC_UPDATE_BEFORE, SPEC_UPDATE_AFTER)
    assert (paired.before, paired.after) == (row.before, row.after)


def test_spec_delete() -> None:
    (row,) = decode(SPEC_DELETE)
    assert isinstance(row, RowChange)
    assert (row.op, row.before, row.after) == (Op.DELETE, ROW_11 | {"sex": "woman"}, None)
    assert encode([row]) == [orjson.loads(SPEC_DELETE)]


def test_spec_overall_format() -> None:
    (row,) = decode(SPEC_OVERALL)
    assert isinstance(row, RowChange)
    assert row.before == {
        "id": 111, "name": "scooter", "binData": b"\x00\x01\xff", "ts": at_ms(1590315269000),
        "rowid": "AAIUMPAAFAACxExAAE",
    }
    assert row.after is not None and row.after["binData"] == b"\xde\xad\xbe\xef"
    assert row.key_columns == ("pkName1", "pkName2")
    assert row.types["binData"] == MySQLType("longblob") and row.types["ts"] == MySQLType("timestamp", decimals=3)
    assert row.meta["scn"] == "xxxx"
    assert row.meta["source"]["schemaName"] == "mySchema" and row.meta["source"]["dbVersion"] == "1.0.0"
    assert row.meta["timestamp"] == {"eventTime": 1, "systemTime": 2, "checkpointTime": 3}
    assert row.meta["version"] == "1.0.0"
    assert encode([row], one_record_per_update=True) == [orjson.loads(SPEC_OVERALL)]


# --- update pairs --------------------------------------------------------------------------------------


def with_op(document: str, op: str, **payload: Any) -> str:
    parsed = json.loads(document)
    parsed["payload"]["op"] = op
    parsed["payload"].update(payload)
    return json.dumps(parsed)


def test_paimon_spelling_update_before_pairs_too() -> None:
    (row,) = decode(with_op(SPEC_UPDATE_BEFORE, "UPDATE_BEFORE"), SPEC_UPDATE_AFTER)
    assert isinstance(row, RowChange) and row.op is Op.UPDATE and row.before and row.after
    assert row.meta["updateBefore"]["op"] == "UPDATE_BEFORE"


def test_before_half_is_held_until_its_after_half() -> None:
    decoder = CODEC.decoder()
    assert decoder.decode(message(SPEC_UPDATE_BEFORE, 0)) == []
    (row,) = decoder.decode(message(SPEC_UPDATE_AFTER, 1))
    assert isinstance(row, RowChange) and row.before and row.after


def test_after_half_without_before_is_an_update_with_unknown_before() -> None:
    (row,) = decode(SPEC_UPDATE_AFTER)
    assert isinstance(row, RowChange)
    assert (row.op, row.before, row.after) == (Op.UPDATE, None, ROW_11 | {"sex": "woman"})
    assert row.meta["unpaired"] is True
    assert encode([row]) == [orjson.loads(SPEC_UPDATE_AFTER)]


def test_before_half_followed_by_another_message_comes_out_first_on_its_own() -> None:
    unpaired, insert = decode(SPEC_UPDATE_BEFORE, SPEC_INSERT)
    assert isinstance(unpaired, RowChange) and isinstance(insert, RowChange)
    assert (unpaired.op, unpaired.before, unpaired.after) == (Op.UPDATE, ROW_11 | {"sex": "man"}, None)
    assert unpaired.meta["unpaired"] is True and unpaired.origin == Origin("dw", 0, 0)
    assert insert.op is Op.INSERT
    assert encode([unpaired]) == [orjson.loads(SPEC_UPDATE_BEFORE)]


def test_before_half_with_an_after_half_of_another_update_pairs_with_neither() -> None:
    other = with_op(SPEC_UPDATE_AFTER, "UPDATE_AFTER", sequenceId="1620457642589000009")
    before, after = decode(SPEC_UPDATE_BEFORE, other)
    assert isinstance(before, RowChange) and isinstance(after, RowChange)
    assert (before.after, after.before) == (None, None)


def test_two_before_halves_in_a_row() -> None:
    events = decode(SPEC_UPDATE_BEFORE, SPEC_UPDATE_BEFORE, SPEC_UPDATE_AFTER)
    assert [(e.before is not None, e.after is not None) for e in events] == [(True, False), (True, True)]


def test_before_half_survives_an_undecodable_message_between() -> None:
    decoder = CODEC.decoder()
    assert decoder.decode(message(SPEC_UPDATE_BEFORE, 0)) == []
    with pytest.raises(DecodeError):
        decoder.decode(message(b"{not json", 1))
    (row,) = decoder.decode(message(SPEC_UPDATE_AFTER, 2))
    assert isinstance(row, RowChange) and row.before and row.after


def test_flush_surfaces_a_held_half_once() -> None:
    decoder = CODEC.decoder()
    decoder.decode(message(SPEC_UPDATE_BEFORE))
    (held,) = decoder.flush()
    assert isinstance(held, RowChange) and held.after is None
    assert decoder.flush() == []


def test_control_messages_after_a_held_half_keep_their_order() -> None:
    before, heartbeat = decode(SPEC_UPDATE_BEFORE, SPEC_HEARTBEAT)
    assert isinstance(before, RowChange) and isinstance(heartbeat, Heartbeat)


def test_update_before_op_option_and_shared_sequence_id() -> None:
    row = RowChange(Op.UPDATE, "db", "t", {"id": 1}, {"id": 2}, {"id": MySQLType("int")}, ("id",))
    first, second = encode([row], update_before_op="UPDATE_BEFORE")
    assert (first["payload"]["op"], second["payload"]["op"]) == ("UPDATE_BEFORE", "UPDATE_AFTER")
    assert (first["payload"]["after"], second["payload"]["before"]) == (None, None)
    assert first["payload"]["sequenceId"] == second["payload"]["sequenceId"]
    (one,) = encode([row], one_record_per_update=True)
    assert one["payload"]["op"] == "UPDATE_AFTER"
    assert (one["payload"]["before"], one["payload"]["after"]) == ({"dataColumn": {"id": 1}}, {"dataColumn": {"id": 2}})


def test_update_before_op_option_takes_only_the_two_spellings() -> None:
    with pytest.raises(OptionError):
        CODEC.encoder(update_before_op="UPDATE")


# --- transactions, DDL, heartbeats ---------------------------------------------------------------------


def control(op: str, ddl: Any = None, source: Any = None) -> str:
    return json.dumps(
        {
            "schema": {"dataColumn": None, "primaryKey": None, "source": source},
            "payload": {
                "before": None, "after": None, "sequenceId": "7", "timestamp": {"eventTime": 1700000000000},
                "op": op, "ddl": ddl,
            },
            "version": "0.0.1",
        }
    )


SOURCE = {"dbType": "MySQL", "dbName": "shop", "tableName": "orders"}


@pytest.mark.parametrize(
    ("op", "mark"), [("TRANSACTION_BEGIN", TransactionMark.BEGIN), ("TRANSACTION_END", TransactionMark.END)]
)
def test_transaction_marks(op: str, mark: TransactionMark) -> None:
    (event,) = decode(control(op, source=SOURCE))
    assert event == Transaction(mark, "shop", "orders", Origin("dw", 0, 0), event.meta)
    assert event.meta["sequenceId"] == "7"
    assert encode([event]) == [json.loads(control(op, source=SOURCE))]


@pytest.mark.parametrize(
    ("op", "sql", "kind"),
    [
        ("CREATE", "CREATE TABLE orders (id BIGINT PRIMARY KEY)", DdlKind.CREATE_TABLE),
        ("ALTER", "ADD COLUMN note VARCHAR(20)", DdlKind.ALTER_TABLE),  # the spec's ddl.text is such a fragment
        ("ALTER", "ALTER TABLE orders ADD COLUMN note VARCHAR(20)", DdlKind.ALTER_TABLE),
        ("ERASE", "DROP TABLE orders", DdlKind.DROP_TABLE),
        ("TRUNCATE", "TRUNCATE TABLE orders", DdlKind.TRUNCATE_TABLE),
        ("RENAME", "RENAME TABLE orders TO orders_old", DdlKind.RENAME_TABLE),
        ("CINDEX", "CREATE INDEX idx_note ON orders (note)", DdlKind.CREATE_INDEX),
        ("CINDEX", "ALTER TABLE orders ADD INDEX idx_note (note)", DdlKind.CREATE_INDEX),
        ("DINDEX", "DROP INDEX idx_note ON orders", DdlKind.DROP_INDEX),
        ("CREATE", "CREATE DATABASE shop", DdlKind.CREATE_DATABASE),
        ("QUERY", "/* tool */ drop database shop", DdlKind.DROP_DATABASE),
        ("QUERY", "create unique index u on orders (id)", DdlKind.CREATE_INDEX),
        ("QUERY", "GRANT SELECT ON shop.* TO 'u'", DdlKind.OTHER),
    ],
)
def test_ddl(op: str, sql: str, kind: DdlKind) -> None:
    ddl = {"text": sql, "ddlMeta": "rO0ABXNy"}
    (event,) = decode(control(op, ddl, SOURCE))
    assert isinstance(event, Ddl)
    assert (event.kind, event.database, event.table, event.sql, event.commit_ts) == (kind, "shop", "orders", sql, None)
    assert event.meta["ddlMeta"] == "rO0ABXNy" and event.meta["op"] == op
    assert ddl_kind(op, sql) is kind
    assert encode([event]) == [json.loads(control(op, ddl, SOURCE))]


def test_ddl_from_another_format_gets_an_op_that_decodes_to_its_kind() -> None:
    for kind, sql in [
        (DdlKind.CREATE_TABLE, "CREATE TABLE t (id INT)"),
        (DdlKind.DROP_TABLE, "DROP TABLE t"),
        (DdlKind.CREATE_DATABASE, "CREATE DATABASE d"),
        (DdlKind.ALTER_TABLE, "ALTER TABLE t ADD c INT"),
        (DdlKind.OTHER, "GRANT ALL ON d.* TO u"),
    ]:
        ddl = Ddl(kind, "d", "t" if "TABLE" in sql else "", sql, commit_ts=450000000000000000)
        (document,) = encode([ddl])
        assert document["payload"]["ddl"] == {"text": sql, "ddlMeta": None}
        assert document["payload"]["timestamp"]["eventTime"] == 450000000000000000 >> 18
        (decoded,) = decode(json.dumps(document))
        assert isinstance(decoded, Ddl) and (decoded.kind, decoded.sql) == (kind, sql)


def test_watermark_becomes_a_heartbeat_and_bootstrap_needs_no_message() -> None:
    tso = (1700000000123 << 18) + 5
    schema = TableSchema("d", "t", ())
    (document,) = encode([Watermark(tso), Bootstrap(schema)])
    assert document["payload"]["op"] == "MHEARTBEAT"
    (heartbeat,) = decode(json.dumps(document))
    assert heartbeat == Heartbeat(1700000000123, Origin("dw", 0, 0), heartbeat.meta)


def test_a_shrunk_large_message_cannot_be_encoded() -> None:
    row = RowChange(Op.INSERT, "d", "t", None, {"id": 1}, {"id": MySQLType("int")})
    with pytest.raises(EncodeError, match="LargeMessageRef"):
        CODEC.encoder().encode([LargeMessageRef(LargeMessageKind.HANDLE_KEY_ONLY, row)])


# --- values: each DataWorks type ---------------------------------------------------------------------

NAMES = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=8)
JAVA_DOUBLE_TEXT = st.one_of(
    st.sampled_from(["NaN", "Infinity", "-Infinity", "1.100000", "0.000", "-0", "1E+10", "123456789012345678901.5"]),
    st.decimals(allow_nan=False, allow_infinity=False, places=6).map(str),
)
VALUES = {
    "BOOLEAN": st.booleans(),
    "DOUBLE": st.floats(allow_nan=False, allow_infinity=False) | JAVA_DOUBLE_TEXT,
    "DATE": st.integers(-62135596800000, 253402300799999),
    "BYTES": st.binary(max_size=24).map(lambda b: base64.b64encode(b).decode()),
    # LONG: Java's long, and past it: DataX's LongColumn holds a BigInteger (bigint unsigned, Oracle NUMBER).
    "LONG": st.integers(-(2**63), 2**64 - 1) | st.integers(-(10**30), 10**30),
    "STRING": st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=20),
}


def expected_value(kind: str, raw: Any) -> Any:
    """What the decoder must make of a JSON value of each DataWorks type (the table in the docs)."""
    if raw is None:
        return None
    if kind == "BOOLEAN":
        return raw
    if kind == "DOUBLE":
        return float(raw)
    if kind == "DATE":
        return at_ms(raw)
    if kind == "BYTES":
        return base64.b64decode(raw)
    return raw


@st.composite
def dataworks_messages(draw: st.DrawFn) -> dict[str, Any]:
    names = draw(st.lists(NAMES, min_size=1, max_size=7, unique=True))
    kinds = {name: draw(st.sampled_from(sorted(VALUES))) for name in names}

    def image() -> dict[str, Any]:
        return {"dataColumn": {n: draw(st.none() | VALUES[k]) for n, k in kinds.items()}}

    op = draw(st.sampled_from(["INSERT", "DELETE", "UPDATE_AFTER"]))
    return {
        "schema": {
            "dataColumn": [{"name": n, "type": k} for n, k in kinds.items()],
            "primaryKey": draw(st.none() | st.lists(st.sampled_from(names), max_size=2, unique=True)),
            "source": {"dbType": "MySQL", "dbName": draw(NAMES), "tableName": draw(NAMES)},
        },
        "payload": {
            "before": image() if op != "INSERT" else None,
            "after": image() if op != "DELETE" else None,
            "sequenceId": str(draw(st.integers(0, 10**19))),
            "timestamp": {"eventTime": draw(st.integers(0, 2**41)), "systemTime": 1, "checkpointTime": 2},
            "op": op,
            "ddl": None,
        },
        "version": "0.0.1",
    }


def same_value(decoded: Any, expected: Any) -> bool:
    if isinstance(expected, float) and math.isnan(expected):
        return isinstance(decoded, float) and math.isnan(decoded)
    return type(decoded) is type(expected) and decoded == expected


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dataworks_messages())
def test_dataworks_typed_round_trip(document: dict[str, Any]) -> None:
    (row,) = decode(json.dumps(document))
    assert isinstance(row, RowChange)
    kinds = {column["name"]: column["type"] for column in document["schema"]["dataColumn"]}
    assert dict(row.types) == {name: MYSQL_TYPE_OF[kind] for name, kind in kinds.items()}
    assert row.key_columns == tuple(document["schema"]["primaryKey"] or ())
    for image, values in (("before", row.before), ("after", row.after)):
        raw = document["payload"][image]
        assert (values is None) == (raw is None)
        for name, value in (raw or {"dataColumn": {}})["dataColumn"].items():
            assert same_value(values[name], expected_value(kinds[name], value)), (name, value)
    # Writing the event back gives the same message (DOUBLE text and all).
    assert encode([row], one_record_per_update=True) == [json.loads(json.dumps(document))]


def test_long_past_64_bits_decodes_exactly_and_is_written_back() -> None:
    document = json.loads(SPEC_INSERT)
    document["payload"]["after"]["dataColumn"]["#alibaba_rds_row_id#"] = 2**70 + 1
    (row,) = decode(json.dumps(document))
    assert row.after["#alibaba_rds_row_id#"] == 2**70 + 1
    (written,) = CODEC.encoder().encode([row])
    assert json.loads(written.value)["payload"]["after"]["dataColumn"]["#alibaba_rds_row_id#"] == 2**70 + 1


# --- values: MySQL-typed events from other formats --------------------------------------------------

# The DataWorks type each MySQL type is written as (the table in docs/formats/dataworks.md).
EXPECTED_DATAWORKS_TYPE = {
    Family.INTEGER: "LONG", Family.YEAR: "LONG", Family.FLOAT: "DOUBLE", Family.DOUBLE: "DOUBLE",
    Family.DECIMAL: "STRING", Family.STRING: "STRING", Family.BINARY: "BYTES", Family.JSON: "STRING",
    Family.DATE: "STRING", Family.DATETIME: "STRING", Family.TIME: "STRING",
}


def expected_dataworks_type(mtype: MySQLType) -> str:
    if mtype.family is Family.BIT:
        return "BOOLEAN" if mtype.length == 1 else "LONG"
    if mtype.family in (Family.ENUM, Family.SET):
        return "STRING" if mtype.elements is not None else "LONG"
    if mtype.family is Family.TIMESTAMP:
        return "DATE" if mtype.decimals is not None and mtype.decimals <= 3 else "STRING"
    return EXPECTED_DATAWORKS_TYPE[mtype.family]


@pytest.mark.parametrize("mtype", TYPES, ids=str)
def test_mysql_type_mapping(mtype: MySQLType) -> None:
    assert dataworks_type(mtype) == expected_dataworks_type(mtype)


def recovered(mtype: MySQLType, decoded: Any, tz: dt.tzinfo) -> Any:
    """The original value, from what the decoder gave and the original type: what a MySQL type written as
    STRING loses is its type, not its value; a bit(1) comes back as a bool, false or true, its 0 or 1."""
    if isinstance(decoded, bool) and mtype.family is Family.BIT:
        return int(decoded)
    if decoded is None or dataworks_type(mtype) != "STRING" or mtype.family in (
        Family.STRING, Family.JSON, Family.ENUM, Family.SET
    ):
        return decoded
    return value_from_text(mtype, decoded, tz)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows(), st.sampled_from([Op.INSERT, Op.UPDATE, Op.DELETE]), st.sampled_from(["UTC", "+08:00"]), st.booleans())
def test_mysql_typed_round_trip(
    row_data: tuple[dict[str, MySQLType], dict[str, Any]], op: Op, tz_name: str, one_record: bool
) -> None:
    """Every MySQL type of tests/strategies.py goes through: what is lost is the type (six DataWorks types,
    decoded as in MYSQL_TYPE_OF: widths, signedness, decimal/temporal/enum types become bigint, double,
    longtext ...), never the value: each decodes to the original, or to text that the original type reads
    back to it exactly (decimal digits and exponent, zero dates, times past 24 hours, timestamps in tz)."""
    types, values = row_data
    before = values if op is not Op.INSERT else None
    after = values if op is not Op.DELETE else None
    # A canal-like meta with a colliding name must not leak into the message.
    row = RowChange(op, "db", "tbl", before, after, types, ("id",), commit_ts=(1700000000000 << 18) + 3,
                    meta={"version": 1, "es": 5})
    messages = CODEC.encoder(tz=tz_name, one_record_per_update=one_record).encode([row])
    assert len(messages) == (2 if op is Op.UPDATE and not one_record else 1)
    (decoded,) = decode(*(m.value for m in messages))
    assert isinstance(decoded, RowChange)
    assert (decoded.op, decoded.database, decoded.table, decoded.key_columns) == (op, "db", "tbl", ("id",))
    assert decoded.commit_ts is None  # DataWorks has no TSO: its physical ms is eventTime
    assert decoded.meta["timestamp"]["eventTime"] == 1700000000000 and decoded.meta["version"] == "0.0.1"
    assert dict(decoded.types) == {name: MYSQL_TYPE_OF[dataworks_type(t)] for name, t in types.items()}
    tz = zone(tz_name)
    for image in (decoded.before, decoded.after):
        if image is not None:
            for name, mtype in types.items():
                back = recovered(mtype, image[name], tz)
                if isinstance(values[name], Decimal):
                    assert back.as_tuple() == values[name].as_tuple()  # every digit, the exponent too
                else:
                    assert back == values[name] and type(back) is type(values[name]), (name, mtype, image[name])


@pytest.mark.parametrize(
    ("mtype", "value", "reason"),
    [
        (MySQLType("timestamp", decimals=3), ZeroTemporal("0000-00-00 00:00:00"), "zero timestamp"),
        (MySQLType("timestamp", decimals=3), dt.datetime(2024, 1, 1, 0, 0, 0, 1500, tzinfo=UTC), "finer digits"),
        (MySQLType("bit", length=1), 2, "0 or 1"),
        (MySQLType("int"), "7", "integer"),
        (MySQLType("blob"), "text", "bytes"),
        (MySQLType("varchar"), b"bytes", "str"),
        (MySQLType("double"), Decimal("1.5"), "float"),
    ],
)
def test_values_a_column_cannot_carry(mtype: MySQLType, value: Any, reason: str) -> None:
    row = RowChange(Op.INSERT, "d", "t", None, {"c": value}, {"c": mtype})
    with pytest.raises(EncodeError, match=reason) as caught:
        CODEC.encoder().encode([row])
    assert caught.value.format_name == "dataworks" and "payload.after.dataColumn.c" in caught.value.reason


def test_value_without_a_type_cannot_be_encoded() -> None:
    row = RowChange(Op.INSERT, "d", "t", None, {"c": 1}, {})
    with pytest.raises(EncodeError, match="no type"):
        CODEC.encoder().encode([row])


def test_fields_the_spec_does_not_name_are_kept_and_written_back() -> None:
    document = json.loads(SPEC_INSERT)
    document["extra"] = 1
    document["schema"]["charset"] = "utf8mb4"
    document["payload"]["gtid"] = "3E11FA47-71CA-11E1-9E33-C80AA9429562:23"
    document["payload"]["after"]["rowKind"] = "+I"
    (row,) = decode(json.dumps(document))
    assert row.meta["unknownFields"] == {
        "message": {"extra": 1},
        "schema": {"charset": "utf8mb4"},
        "payload": {"gtid": "3E11FA47-71CA-11E1-9E33-C80AA9429562:23"},
        "payload.after": {"rowKind": "+I"},
    }
    assert encode([row]) == [document]
    before_half = json.loads(SPEC_UPDATE_BEFORE)
    before_half["payload"]["before"]["rowKind"] = "-U"
    before_half["payload"]["gtid"] = "g:1"
    (pair,) = decode(json.dumps(before_half), SPEC_UPDATE_AFTER)
    assert encode([pair]) == [before_half, json.loads(SPEC_UPDATE_AFTER)]
    ddl = {"text": "TRUNCATE TABLE t", "ddlMeta": None, "position": 4}
    (event,) = decode(control("TRUNCATE", ddl, SOURCE))
    assert event.meta["unknownFields"] == {"payload.ddl": {"position": 4}}
    assert encode([event]) == [json.loads(control("TRUNCATE", ddl, SOURCE))]


def test_events_from_other_formats_get_the_spec_layout() -> None:
    types = {"id": MySQLType("int"), "note": MySQLType("text")}
    row = RowChange(Op.INSERT, "d", "t", None, {"id": 5, "note": None}, types)
    begin = Transaction(TransactionMark.BEGIN)
    first, second = encode([begin, row])
    assert first == {
        "schema": {"dataColumn": None, "primaryKey": None, "source": None},
        "payload": {
            "before": None, "after": None, "sequenceId": "0000000000000000001",
            "timestamp": {"eventTime": -1, "checkpointTime": -1}, "op": "TRANSACTION_BEGIN", "ddl": None,
        },
        "version": "0.0.1",
    }
    assert second == {
        "schema": {
            "dataColumn": [{"name": "id", "type": "LONG"}, {"name": "note", "type": "STRING"}],
            "primaryKey": None,
            "source": {"dbType": "MySQL", "dbName": "d", "tableName": "t"},
        },
        "payload": {
            "before": None, "after": {"dataColumn": {"id": 5, "note": None}}, "sequenceId": "0000000000000000002",
            "timestamp": {"eventTime": -1, "checkpointTime": -1}, "op": "INSERT", "ddl": None,
        },
        "version": "0.0.1",
    }


def test_each_message_is_read_with_its_own_schema() -> None:
    """The decoder remembers a table's schema between messages; a message with a changed one is read by it."""
    new_key = json.loads(SPEC_INSERT)
    new_key["schema"]["primaryKey"] = ["#alibaba_rds_row_id#"]
    new_type = json.loads(SPEC_INSERT)
    new_type["schema"]["dataColumn"][3]["type"] = "STRING"
    new_type["payload"]["after"]["dataColumn"]["#alibaba_rds_row_id#"] = "15"
    first, keyed, retyped, again = decode(SPEC_INSERT, json.dumps(new_key), json.dumps(new_type), SPEC_INSERT)
    assert (first.key_columns, keyed.key_columns, retyped.key_columns) == ((), ("#alibaba_rds_row_id#",), ())
    assert retyped.types["#alibaba_rds_row_id#"] == MySQLType("longtext")
    assert retyped.after["#alibaba_rds_row_id#"] == "15"
    assert again == dataclasses.replace(first, origin=again.origin)


@pytest.mark.parametrize("value", [True, False])
def test_boolean_decodes_to_a_bool_in_tinyint1_and_returns_as_boolean(value: bool) -> None:
    document = json.loads(SPEC_INSERT)
    document["schema"]["dataColumn"].append({"name": "ok", "type": "BOOLEAN"})
    document["payload"]["after"]["dataColumn"]["ok"] = value
    (row,) = decode(json.dumps(document))
    assert row.after["ok"] is value and row.types["ok"] == MySQLType("tinyint", length=1)
    assert encode([row]) == [document]  # meta["dataColumn"] keeps BOOLEAN (tinyint(1) alone would be LONG)
    # As `cdclake decode` prints it, and read back by `cdclake encode`: true or false both ways.
    assert event_to_json(row)["after"]["ok"] is value
    assert event_from_json(event_to_json(row)) == row
    assert event_from_json(event_to_json(row)).after["ok"] is value


@pytest.mark.parametrize("target", ["open", "canal-json", "simple", "simple-avro"])
def test_a_boolean_goes_to_the_tidb_formats_as_mysqls_1_or_0(target: str) -> None:
    """A TiDB format has no boolean: a tinyint(1) holds 1 or 0, which its decoder gives back as ints."""
    document = json.loads(SPEC_INSERT)
    document["schema"]["dataColumn"] += [{"name": "yes", "type": "BOOLEAN"}, {"name": "no", "type": "BOOLEAN"}]
    document["payload"]["after"]["dataColumn"] |= {"yes": True, "no": False}
    (row,) = decode(json.dumps(document))
    codec = get_codec(target)
    # Simple sends the table's schema first; Open needs a commit ts.
    schema = TableSchema(row.database, row.table, tuple(ColumnSchema(n, t) for n, t in row.types.items()),
                         version=1)
    first = [Bootstrap(schema)] if codec.bootstraps else []
    messages = codec.encoder().encode([*first, dataclasses.replace(row, commit_ts=1 << 18, schema_version=1)])
    decoder = codec.decoder()
    (back,) = [event for m in messages for event in decoder.decode(m) if isinstance(event, RowChange)]
    assert (back.after["yes"], back.after["no"]) == (1, 0)
    assert type(back.after["yes"]) is int and back.types["yes"].name == "tinyint"


# --- bad input ---------------------------------------------------------------------------------------


def broken(path: str, value: Any, base: str = SPEC_INSERT) -> str:
    document = json.loads(base)
    *parents, last = path.split(".")
    target = document
    for name in parents:
        target = target[name]
    target[last] = value
    return json.dumps(document)


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (b"", "invalid JSON"),
        (b"{", "invalid JSON"),
        (b"[]", "expected a JSON object"),
        (b'{"schema":{}}', "payload: expected a JSON object"),
        (broken("payload.op", "UPSERT"), "payload.op: expected one of INSERT"),
        (broken("payload.op", "GTID"), "payload.op"),
        (broken("payload.sequenceId", 5), "payload.sequenceId"),
        (broken("payload.timestamp", 5), "payload.timestamp"),
        (broken("schema.dataColumn", None), "schema.dataColumn"),
        (broken("schema.dataColumn", [{"name": "x", "type": "INT"}]), "schema.dataColumn[0]"),
        (broken("schema.primaryKey", "name"), "schema.primaryKey"),
        (broken("schema.source", None), "schema.source"),
        (broken("payload.after", None), "payload.after: a INSERT message needs the after image, got null"),
        (broken("payload.after.dataColumn.extra", 1), "payload.after.dataColumn.extra: the column is not in"),
        (broken("payload.after.dataColumn.#alibaba_rds_row_id#", "15"), "a LONG is a JSON integer"),
        (broken("payload.after.dataColumn.#alibaba_rds_row_id#", 1.5), "a LONG is a JSON integer"),
        (broken("payload.after.dataColumn.name", 11), "payload.after.dataColumn.name: a STRING"),
        (broken("payload.ddl", {"text": "x"}), "payload.ddl"),
        (broken("payload.before", {"dataColumn": {}}), "payload.before: a INSERT message has no before image"),
        (broken("payload.after", {"dataColumn": {}}, SPEC_DELETE), "payload.after: a DELETE message has no after"),
        (broken("payload.after", {"dataColumn": {}}, SPEC_UPDATE_BEFORE), "payload.after: a UPDATE_BEFOR message"),
        (broken("payload.before", None, SPEC_UPDATE_BEFORE), "payload.before: a UPDATE_BEFOR message needs"),
        (broken("payload.ddl", None, control("ALTER", source=SOURCE)), "payload.ddl"),
        (broken("payload.timestamp", {"checkpointTime": 1}, SPEC_HEARTBEAT), "eventTime"),
        (b'{"schema":null,"payload":{"op":"INSERT"}}', "schema.source"),
        (b'{"payload":{"op":"MHEARTBEAT","timestamp":{"eventTime":1},"after":{}}}', "no row image"),
        (b'{"payload":{"op":"INSERT"},"x":NaN}', "invalid JSON"),
    ],
)
def test_bad_input_is_a_decode_error_saying_what_and_where(value: bytes | str, reason: str) -> None:
    with pytest.raises(DecodeError) as caught:
        CODEC.decoder().decode(message(value, 42))
    assert caught.value.format_name == "dataworks"
    assert reason in caught.value.reason
    assert caught.value.origin == Origin("dw", 0, 42)


@pytest.mark.parametrize(
    ("kind", "raw", "reason"),
    [
        ("BOOLEAN", 1, "true or false"),
        ("DOUBLE", "1_0", "DOUBLE"),
        ("DOUBLE", "inf", "DOUBLE"),
        ("DOUBLE", True, "DOUBLE"),
        ("DATE", 253402300800000, "years 1-9999"),
        ("DATE", "2024-01-01", "DATE"),
        ("BYTES", "not base64!", "base64"),
        ("BYTES", "QUJD\u00e9", "base64"),
        ("STRING", ["x"], "STRING"),
    ],
)
def test_values_outside_their_type_are_decode_errors(kind: str, raw: Any, reason: str) -> None:
    document = json.loads(SPEC_INSERT)
    document["schema"]["dataColumn"].append({"name": "v", "type": kind})
    document["payload"]["after"]["dataColumn"]["v"] = raw
    with pytest.raises(DecodeError, match=reason) as caught:
        decode(json.dumps(document))
    assert "payload.after.dataColumn.v" in caught.value.reason


def test_tombstone_is_a_decode_error() -> None:
    with pytest.raises(DecodeError, match="tombstone"):
        CODEC.decoder().decode(message(None))


def fuzz_seeds(vectors: Path) -> list[bytes]:
    """The vectors' messages and the spec's, one of each kind (bench/fuzz.py mutates them too)."""
    return [vector_json(vectors, name) for name in VECTOR_FILES] + [
        s.encode()
        for s in (SPEC_HEARTBEAT, SPEC_INSERT, SPEC_UPDATE_BEFORE, SPEC_UPDATE_AFTER, SPEC_DELETE, SPEC_OVERALL,
                  control("TRANSACTION_BEGIN", source=SOURCE), control("QUERY", {"text": "DROP TABLE t"}, SOURCE))
    ]


def test_fuzzed_messages_raise_only_decode_errors(vectors: Path) -> None:
    seeds = fuzz_seeds(vectors)
    decoder = CODEC.decoder()  # one decoder, so held halves meet garbage too
    decoded = past_the_parser = 0
    for offset, mutant in enumerate(mutations(seeds, 10_000, seed=7)):
        try:
            decoded += len(decoder.decode(message(mutant, offset)))
        except DecodeError as exc:
            assert exc.format_name == "dataworks" and exc.origin == Origin("dw", 0, offset)
            past_the_parser += "invalid JSON" not in exc.reason
    decoder.flush()
    # The mutants reach the checks behind the JSON parser, and some still decode.
    assert decoded and past_the_parser


# --- one decoder, many messages: what is remembered per table must not leak between messages -----------


def overall_with(before: dict[str, Any] | None, after: dict[str, Any] | None) -> str:
    document = json.loads(SPEC_OVERALL)
    document["payload"]["before"] = None if before is None else {"dataColumn": before}
    document["payload"]["after"] = None if after is None else {"dataColumn": after}
    return json.dumps(document)


OVERALL_ROW = {"id": 1, "name": "a", "binData": "AAH/", "ts": 1590315269000, "rowid": "r"}


def test_one_decoder_reads_each_pattern_of_nulls_as_a_fresh_one_does() -> None:
    decoder = CODEC.decoder()
    for offset in range(2 ** len(OVERALL_ROW)):
        row = {name: None if offset >> i & 1 else value for i, (name, value) in enumerate(OVERALL_ROW.items())}
        value = overall_with(row, dict(row, id=2))
        (event,) = decoder.decode(message(value, offset))
        (fresh,) = decode(value)
        assert event == dataclasses.replace(fresh, origin=event.origin)
        for image in (event.before, event.after):
            assert image is not None
            assert image["binData"] == (None if row["binData"] is None else b"\x00\x01\xff")
            assert image["ts"] == (None if row["ts"] is None else at_ms(1590315269000))


def test_image_columns_in_another_order_than_the_schema() -> None:
    reordered = dict(reversed(list(OVERALL_ROW.items())))
    decoder = CODEC.decoder()
    for offset, value in enumerate([overall_with(OVERALL_ROW, OVERALL_ROW), overall_with(reordered, reordered)] * 2):
        (event,) = decoder.decode(message(value, offset))
        assert event.before == event.after == {
            "id": 1, "name": "a", "binData": b"\x00\x01\xff", "ts": at_ms(1590315269000), "rowid": "r"
        }
        assert list(event.after) == list(json.loads(value)["payload"]["after"]["dataColumn"])


@pytest.mark.parametrize(
    ("name", "raw", "reason"),
    [
        ("binData", "not base64!", "base64"),
        ("binData", "QUJD\u00e9", "base64"),
        ("binData", 5, "base64"),
        ("ts", 253402300800000, "years 1-9999"),
        ("ts", -62135596800001, "years 1-9999"),
        ("ts", True, "DATE"),
        ("id", "1", "a LONG is a JSON integer"),
        ("id", False, "a LONG is a JSON integer"),
        ("name", 1, "a STRING"),
    ],
)
def test_a_bad_value_in_the_second_image_is_reported_and_a_held_half_kept(name: str, raw: Any, reason: str) -> None:
    decoder = CODEC.decoder()
    assert decoder.decode(message(SPEC_UPDATE_BEFORE, 0)) == []
    good = overall_with(OVERALL_ROW, OVERALL_ROW)
    assert decoder.decode(message(good, 1))  # the held half comes out, and the table is remembered
    assert decoder.decode(message(SPEC_UPDATE_BEFORE, 2)) == []
    with pytest.raises(DecodeError) as caught:
        decoder.decode(message(overall_with(OVERALL_ROW, dict(OVERALL_ROW, **{name: raw})), 3))
    assert f"payload.after.dataColumn.{name}" in caught.value.reason and reason in caught.value.reason
    (joined,) = decoder.decode(message(SPEC_UPDATE_AFTER, 4))
    assert isinstance(joined, RowChange) and joined.before and joined.after
    assert joined.meta["updateBefore"]["sequenceId"] == "1620457642589000001"
    (again,) = decoder.decode(message(good, 5))
    assert again.after is not None and again.after["binData"] == b"\x00\x01\xff"


def test_double_given_as_a_json_integer_is_a_float() -> None:
    document = json.loads(SPEC_INSERT)
    document["schema"]["dataColumn"].append({"name": "v", "type": "DOUBLE"})
    for raw in (7, -(2**63), 2**64 + 1):
        document["payload"]["after"]["dataColumn"]["v"] = raw
        (row,) = decode(json.dumps(document))
        assert type(row.after["v"]) is float and row.after["v"] == float(raw)
    document["payload"]["after"]["dataColumn"]["v"] = True
    with pytest.raises(DecodeError, match="DOUBLE"):
        decode(json.dumps(document))


def test_oracle_scn_and_unknown_fields_on_one_decoder() -> None:
    """Messages beside the usual shape, decoded by one decoder between usual ones, keep all they carry."""
    with_scn = json.loads(SPEC_OVERALL)
    with_extra = json.loads(SPEC_OVERALL)
    with_extra["payload"]["gtid"] = "g:1"
    with_extra["payload"]["after"]["rowKind"] = "+U"
    usual = json.loads(SPEC_OVERALL)
    del usual["payload"]["scn"]
    values = [json.dumps(d) for d in (usual, with_scn, usual, with_extra, usual)]
    decoder = CODEC.decoder()
    events = [e for offset, value in enumerate(values) for e in decoder.decode(message(value, offset))]
    assert [dataclasses.replace(e, origin=None) for e in events] == [
        dataclasses.replace(e, origin=None) for value in values for e in decode(value)
    ]
    assert "scn" not in events[0].meta and events[1].meta["scn"] == "xxxx"
    assert events[3].meta["unknownFields"] == {"payload": {"gtid": "g:1"}, "payload.after": {"rowKind": "+U"}}
    assert encode(events, one_record_per_update=True) == [json.loads(v) for v in values]


def test_six_payload_fields_other_than_the_usual_six() -> None:
    """scn in place of ddl: as many payload fields as usual, and still every one kept."""
    document = json.loads(SPEC_OVERALL)
    del document["payload"]["ddl"]
    decoder = CODEC.decoder()
    first, second = (decoder.decode(message(json.dumps(document), offset))[0] for offset in range(2))
    assert first.meta["scn"] == second.meta["scn"] == "xxxx" and "ddl" not in first.meta
    assert dataclasses.replace(first, origin=None) == dataclasses.replace(second, origin=None)
    assert first.after is not None and first.after["binData"] == b"\xde\xad\xbe\xef"
