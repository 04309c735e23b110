"""Canal-JSON: the decoding and encoding rules, one by one."""

from __future__ import annotations

import datetime as dt
import json
import re
from decimal import Decimal

import orjson
import pytest

from cdclake.errors import DecodeError, EncodeError
from cdclake.formats.canal_json.wire import JAVA_SQL_TYPES, go_json_string, java_sql_type, mysql_type_text
from cdclake.formats.compression import compressor
from cdclake.formats.ddl import kind_of_ticdc_type
from cdclake.model import (
    Bootstrap,
    ColumnSchema,
    Ddl,
    DdlKind,
    Heartbeat,
    LargeMessageKind,
    LargeMessageRef,
    Op,
    RawMessage,
    RowChange,
    TableSchema,
    Watermark,
)
from cdclake.types import MySQLType
from cdclake.values import ZeroTemporal, parse_time
from tests.formats.canal_json.helpers import CODEC, ORIGIN, decode, decode_one, encode, message, rows_of

# --- decoding rules ------------------------------------------------------------------------------------


def test_update_old_rules() -> None:
    """A partial old lists what changed; a column left out kept data's value; a null WAS NULL. A
    missing old, [], and [null] (tiflow#4597) say nothing changed, as TiCDC's decoders read them."""
    types = {"id": "int", "a": "varchar", "b": "varchar"}
    data = [{"id": "1", "a": "new", "b": "kept"}]
    partial = decode_one(message("UPDATE", data, mysqlType=types, old=[{"a": None}]))
    assert partial.before == {"id": 1, "a": None, "b": "kept"}
    for old in (None, [], [None]):
        unchanged = decode_one(message("UPDATE", data, mysqlType=types, old=old))
        assert unchanged.before == unchanged.after == {"id": 1, "a": "new", "b": "kept"}
    two_rows = decode(message("UPDATE", data * 2, mysqlType=types, old=[{"a": "first"}]))
    assert [change.before["a"] for change in rows_of(two_rows) if change.before] == ["first", "new"]
    with pytest.raises(DecodeError, match='"old" has 2 rows for the 1 of "data"'):
        decode(message("UPDATE", data, mysqlType=types, old=[{}, {}]))


def test_delete_and_insert_ignore_old() -> None:
    """DELETE: data is the row; old is null since v5.4.0 and repeated data before. INSERT: old is
    null, or [] in Paimon's audit-time file."""
    data = [{"id": "1", "c": "x"}]
    new_style, old_style = (decode_one(message("DELETE", data, old=old)) for old in (None, data))
    assert new_style == old_style and new_style.before == {"id": 1, "c": "x"} and new_style.after is None
    assert decode_one(message("INSERT", old=[])) == decode_one(message("INSERT"))


def test_event_numbering_across_rows_and_messages() -> None:
    value = message("INSERT", [{"id": "1", "c": "a"}, {"id": "2", "c": "b"}]) + b"\n\n" + message("DELETE") + b"\n"
    events = decode(value)
    assert [event.origin for event in events] == [ORIGIN, ORIGIN.at(1), ORIGIN.at(2)]
    assert [event.op for event in rows_of(events)] == [Op.INSERT, Op.INSERT, Op.DELETE]
    assert events[0].meta is events[1].meta  # one message's fields, shared by its rows


def test_typed_json_values_of_typed_columns() -> None:
    types = {"i": "int", "t": "tinyint(1)", "d": "decimal(10,2)", "f": "float", "j": "json", "e": "enum('a','b')"}
    row = {"i": 5.0, "t": True, "d": 5.15, "f": 2, "j": {"k": [1, None]}, "e": 2}
    insert = decode_one(message(data=[row], mysqlType=types))
    assert insert.after == {"i": 5, "t": 1, "d": Decimal("5.15"), "f": 2.0, "j": '{"k":[1,null]}', "e": "b"}
    assert type(insert.after["i"]) is int and type(insert.after["t"]) is int
    for bad, reason in [
        ({"i": 5.5}, "column 'i': expected an integer, got the number 5.5"),
        ({"i": 2**31}, "column 'i': 2147483648 is outside the range of int"),
        ({"c": 12}, "column 'c': expected a string, got the number 12"),
        ({"d": True}, None),  # a boolean is MySQL's 1: allowed
        ({"e": 3}, "column 'e': enum index 3 outside enum('a','b')"),
    ]:
        columns = {**types, "c": "varchar"}
        if reason is None:
            assert decode_one(message(data=[bad], mysqlType=columns)).after == {"d": Decimal(1)}
            continue
        with pytest.raises(DecodeError, match=re.escape(f"data[0] {reason}")):
            decode(message(data=[bad], mysqlType=columns))


def test_types_inferred_for_columns_without_mysql_type() -> None:
    rows = [
        {"n": 1, "b": True, "x": 1, "big": 2**63, "s": "t", "o": {"a": 1}, "l": [1], "z": None},
        {"n": None, "b": False, "x": 1.5, "big": 1, "s": None, "o": [2], "l": None, "z": None},
    ]
    changes = rows_of(decode(orjson.dumps({"type": "INSERT", "data": rows})))
    assert changes[0].types == {
        "n": MySQLType("bigint"),
        "b": MySQLType("tinyint", length=1),
        "x": MySQLType("double"),
        "big": MySQLType("bigint", unsigned=True),
        "s": MySQLType("longtext"),
        "o": MySQLType("json"),
        "l": MySQLType("json"),
    }  # z is null in every row: no type
    assert changes[0].after == {"n": 1, "b": 1, "x": 1.0, "big": 2**63, "s": "t", "o": '{"a":1}', "l": "[1]", "z": None}
    assert changes[1].after == {"n": None, "b": 0, "x": 1.5, "big": 1, "s": None, "o": "[2]", "l": None, "z": None}
    with pytest.raises(DecodeError, match=r"column 'm' has no mysqlType and its values mix JSON kinds \(int, str\)"):
        decode(orjson.dumps({"type": "INSERT", "data": [{"m": 1}, {"m": "1"}]}))
    partly = decode_one(message(data=[{"id": "1", "c": "x", "extra": 7}]))
    assert partly.types["id"] == MySQLType("int") and partly.types["extra"] == MySQLType("bigint")


def test_integers_at_the_64_bit_edges() -> None:
    unsigned = {"u": "bigint unsigned", "s": "bigint"}
    edges = decode_one(message(data=[{"u": "18446744073709551615", "s": "-9223372036854775808"}], mysqlType=unsigned))
    assert edges.after == {"u": 2**64 - 1, "s": -(2**63)}
    typed = decode_one(message(data=[{"u": 18446744073709551615, "s": -9223372036854775808}], mysqlType=unsigned))
    assert typed.after == edges.after
    with pytest.raises(DecodeError, match="18446744073709551616 is outside the range of bigint unsigned"):
        decode(message(data=[{"u": "18446744073709551616"}], mysqlType=unsigned))
    # orjson reads a JSON integer beyond 64 bits as a float: too coarse to be an integer.
    beyond = b'{"type":"INSERT","mysqlType":{"u":"bigint unsigned"},"data":[{"u":18446744073709551616}]}'
    with pytest.raises(DecodeError, match="expected an integer"):
        decode(beyond)


def test_tidb_extension_fields() -> None:
    plain = decode_one(message(_tidb={"commitTs": 5, "onlyHandleKey": False, "rowkey": "dIAAAA=="}))
    assert isinstance(plain, RowChange) and plain.commit_ts == 5 and plain.meta["rowkey"] == "dIAAAA=="
    both = decode_one(message(_tidb={"commitTs": 5, "onlyHandleKey": True, "claimCheckLocation": "s3://b/x.json"}))
    assert isinstance(both, LargeMessageRef) and both.kind is LargeMessageKind.CLAIM_CHECK  # the location wins
    ddl = decode_one(
        orjson.dumps({"isDdl": True, "type": "CREATE", "sql": "create table t (a int)", "_tidb": {"commitTs": 9}})
    )
    assert isinstance(ddl, Ddl) and ddl.commit_ts == 9 and (ddl.database, ddl.table) == ("", "")


@pytest.mark.parametrize(
    ("canal_type", "sql", "kind"),
    [
        ("QUERY", "drop database if exists test", DdlKind.DROP_DATABASE),
        ("QUERY", "CREATE DATABASE IF NOT EXISTS canal_hvygfc", DdlKind.CREATE_DATABASE),
        ("QUERY", "/* hint */ create schema s", DdlKind.CREATE_DATABASE),
        ("QUERY", "-- note\nDROP SCHEMA s", DdlKind.DROP_DATABASE),
        ("QUERY", f"/* {'long comment ' * 30} */ CREATE DATABASE d", DdlKind.CREATE_DATABASE),
        ("QUERY", "ALTER DATABASE d CHARACTER SET utf8mb4", DdlKind.OTHER),
        ("QUERY", "CREATE OR REPLACE ALGORITHM=MERGE VIEW v AS SELECT 1", DdlKind.OTHER),
        ("CREATE", "CREATE TABLE t (a int)", DdlKind.CREATE_TABLE),
        ("CREATE", "CREATE VIEW v AS SELECT 1", DdlKind.OTHER),
        ("ERASE", "DROP TABLE t", DdlKind.DROP_TABLE),
        ("ALTER", "/* Query from DMS */ ALTER TABLE t ADD COLUMN v2 INT", DdlKind.ALTER_TABLE),
        ("RENAME", "RENAME TABLE a TO b, c TO d", DdlKind.RENAME_TABLE),
        ("TRUNCATE", "TRUNCATE t", DdlKind.TRUNCATE_TABLE),
        ("CINDEX", "ALTER TABLE t ADD INDEX i (a)", DdlKind.CREATE_INDEX),
        ("DINDEX", "DROP INDEX i ON t", DdlKind.DROP_INDEX),
        ("GTID", "create unique index i on t (a)", DdlKind.CREATE_INDEX),  # an unknown type: the SQL says
    ],
)
def test_ddl_kinds(canal_type: str, sql: str, kind: DdlKind) -> None:
    assert kind_of_ticdc_type(canal_type, sql) is kind
    ddl = decode_one(orjson.dumps({"database": "d", "table": "t", "isDdl": True, "type": canal_type, "sql": sql}))
    assert isinstance(ddl, Ddl) and ddl.kind is kind and ddl.meta["type"] == canal_type


def test_a_ddl_type_without_is_ddl_is_a_ddl() -> None:
    """Flink skips type CREATE without reading isDdl; a Canal DDL type names a DDL here too."""
    ddl = decode_one(orjson.dumps({"type": "ALTER", "sql": "ALTER TABLE t ADD c INT", "data": None}))
    assert isinstance(ddl, Ddl) and ddl.kind is DdlKind.ALTER_TABLE


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (
            b'{"type":"INSERT",',
            "not JSON: Expecting property name enclosed in double quotes at line 1 column 18 (char 17)",
        ),
        (b'{"type":"INSERT"}\n{"type":', "not JSON: Expecting value at line 2 column 9 (char 26)"),
        (b'{"type":"INSERT","data":[{"c":"\xff"}]}', "not UTF-8 text: invalid start byte at byte 31"),
        (b'{"type":"INSERT","data":[{"c":"\\ud800"}]}', "lone UTF-16 surrogate"),
        (b"  \n ", "the value holds no JSON message, only whitespace"),
        (b"[1]", "expected a JSON object, got an array"),
        (b'{"type":7}', 'the message has no "type" naming its event, got the number 7'),
        (message(isDdl="false"), "\"isDdl\" must be true or false, got the string 'false'"),
        (message(data={"id": "1"}), '"data" of a INSERT message must be an array of rows, got an object'),
        (message(data=["x"]), "data[0] must be an object of column values, got the string 'x'"),
        (message(pkNames="id"), '"pkNames" must be an array of column names'),
        (message(database=1), '"database" must be a string, got the number 1'),
        (message(mysqlType=["int"]), '"mysqlType" must map column names to types, got an array'),
        (message("UPDATE", old={"id": "1"}), '"old" of an UPDATE must be an array of rows, got an object'),
        (message("UPDATE", old=["x"]), "old[0] must be an object of column values, got the string 'x'"),
        (message("UPDATE", old=[{"id": "x"}]), "old[0] column 'id': invalid literal for int()"),
        (
            message(mysqlType={"id": 4, "c": "varchar"}),
            "mysqlType of column 'id' must be a type name, got the number 4",
        ),
        (message(mysqlType={"id": "int", "c": "varchr"}), "mysqlType of column 'c': unknown MySQL type 'varchr'"),
        (message(data=[{"id": "one"}]), "data[0] column 'id': invalid literal for int() with base 10: 'one'"),
        (
            message(mysqlType={"id": "date"}, data=[{"id": "2024-02-30"}]),
            "data[0] column 'id': not a date: '2024-02-30'",
        ),
        (
            message(mysqlType={"id": "blob"}, data=[{"id": "\u0100"}]),
            "data[0] column 'id': 'latin-1' codec can't encode",
        ),
        (message(_tidb=[1]), '"_tidb" must be an object, got an array'),
        (
            message(_tidb={"commitTs": -1}),
            '"_tidb.commitTs" must be a TSO (an unsigned 64-bit integer), got the number -1',
        ),
        (message(_tidb={"commitTs": "5"}), '"_tidb.commitTs" must be a TSO'),
        (message(_tidb={"commitTs": 5, "onlyHandleKey": "yes"}), '"_tidb.onlyHandleKey" must be true or false'),
        (message(_tidb={"claimCheckLocation": 3}), '"_tidb.claimCheckLocation" must be a string'),
        (message("TIDB_WATERMARK"), 'a TIDB_WATERMARK message needs "_tidb": {"watermarkTs": ...}'),
        (orjson.dumps({"isDdl": True, "type": "QUERY", "sql": " "}), 'a DDL message needs its statement in "sql"'),
        (message("UPSERT"), "unknown type 'UPSERT': expected INSERT, UPDATE, DELETE, TIDB_WATERMARK, or a DDL"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    ],
)
def test_bad_input_is_a_decode_error(value: bytes, reason: str) -> None:
    """Each error names the format, what was expected and what came, and the message's origin; for
    text that is not JSON the reason holds the line and column."""
    with pytest.raises(DecodeError) as error:
        decode(value)
    assert error.value.format_name == "canal-json" and error.value.origin == ORIGIN
    assert reason in error.value.reason
    assert str(error.value).endswith(f"at {ORIGIN}")


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (b'{"type":"INSERT","sql":"x', "not JSON: Unterminated string starting at line 1 column 24 (char 23)"),
        (b'{"type":"INSERT","sql":"\x01"}', "not JSON: Invalid control character at line 1 column 25 (char 24)"),
    ],
)
def test_a_json_error_says_where_once(value: bytes, reason: str) -> None:
    """The standard library's messages that end in "at" do not make "starting at at line"."""
    with pytest.raises(DecodeError) as error:
        decode(value)
    assert error.value.reason == reason


@pytest.mark.parametrize("compression", ["snappy", "lz4"])
def test_large_message_handle_compression(compression: str) -> None:
    insert = decode_one(message(es=1, ts=2))
    (plain,) = encode([insert])
    (compressed,) = encode([insert], large_message_handle_compression=compression)
    assert compressed == compressor(compression)(plain)
    assert decode_one(compressed, large_message_handle_compression=compression) == insert == decode_one(plain)
    with pytest.raises(DecodeError, match="cannot decompress the value"):
        decode(plain, large_message_handle_compression=compression)


@pytest.mark.parametrize(
    ("tz", "instant"),
    [
        ("UTC", dt.datetime(2024, 3, 10, 1, 30, 5, 120000, tzinfo=dt.UTC)),
        ("+08:00", dt.datetime(2024, 3, 9, 17, 30, 5, 120000, tzinfo=dt.UTC)),
        ("-05:30", dt.datetime(2024, 3, 10, 7, 0, 5, 120000, tzinfo=dt.UTC)),
        ("America/New_York", dt.datetime(2024, 3, 10, 6, 30, 5, 120000, tzinfo=dt.UTC)),
    ],
)
def test_timestamps_are_wall_clock_in_the_producer_zone(tz: str, instant: dt.datetime) -> None:
    value = message(mysqlType={"ts": "timestamp"}, data=[{"ts": "2024-03-10 01:30:05.12"}])
    decoded = decode_one(value, tz=tz)
    assert decoded.after == {"ts": instant}
    (again,) = encode([decoded], tz=tz)
    assert orjson.loads(again)["data"] == [{"ts": "2024-03-10 01:30:05.120000"}]  # fsp unknown: six digits


def test_temporal_texts() -> None:
    types = {"d": "date", "dt": "datetime(3)", "ts": "timestamp", "t": "time(6)", "y": "year"}
    row = {
        "d": "0000-00-00",
        "dt": "2024-00-15 10:00:00.000",
        "ts": "0000-00-00 00:00:00",
        "t": "-838:59:59.000001",
        "y": "0",
    }
    zero = decode_one(message(data=[row], mysqlType=types))
    assert zero.after == {
        "d": ZeroTemporal("0000-00-00"),
        "dt": ZeroTemporal("2024-00-15 10:00:00.000"),
        "ts": ZeroTemporal("0000-00-00 00:00:00"),
        "t": -dt.timedelta(hours=838, minutes=59, seconds=59, microseconds=1),
        "y": 0,
    }
    (again,) = encode([zero], content_compatible=True)
    assert orjson.loads(again)["data"] == [row]
    for bad in ("2024-01-02 03:04:05+08:00", "2024-W01-1 03:04:05", "2024-01-02 3:04:05"):
        with pytest.raises(DecodeError, match="not a datetime"):
            decode(message(data=[{"dt": bad}], mysqlType=types))


# --- encoding rules ------------------------------------------------------------------------------------

UNSIGNED_SQL_TYPES = [  # spec, 整数类型: value ranges and their JDBC codes
    ("tinyint", -128, -6),
    ("tinyint unsigned", 127, -6),
    ("tinyint unsigned", 128, 5),
    ("smallint unsigned", 32767, 5),
    ("smallint unsigned", 32768, 4),
    ("mediumint unsigned", 8388608, 4),
    ("int unsigned", 2147483647, 4),
    ("int unsigned", 2147483648, -5),
    ("bigint", -(2**63), -5),
    ("bigint unsigned", 2**63 - 1, -5),
    ("bigint unsigned", 2**63, 3),
    ("bigint unsigned", None, -5),  # NULL: the type's own code
]


@pytest.mark.parametrize(("text", "value", "code"), UNSIGNED_SQL_TYPES)
def test_sql_type_of_integers(text: str, value: int | None, code: int) -> None:
    assert java_sql_type(MySQLType.parse(text), value) == code


def test_sql_type_table_of_the_spec() -> None:
    """Spec, SQL Type 字段: Boolean -6, Float 7, Double 8, Decimal 3, Char 1, Varchar 12, binary and
    blob types 2004, text types 2005, Date 91, Datetime/Timestamp 93, Time 92, Year 12, Enum 4,
    Set -7, Bit -7, JSON 12."""
    spec = {
        "bool": -6, "float": 7, "double": 8, "decimal": 3, "char": 1, "varchar": 12, "binary": 2004,
        "varbinary": 2004, "tinytext": 2005, "text": 2005, "mediumtext": 2005, "longtext": 2005,
        "tinyblob": 2004, "blob": 2004, "mediumblob": 2004, "longblob": 2004, "date": 91, "datetime": 93,
        "timestamp": 93, "time": 92, "year": 12, "enum": 4, "set": -7, "bit": -7, "json": 12,
    }  # fmt: skip
    assert {text: java_sql_type(MySQLType.parse(text), None) for text in spec} == spec
    assert set(JAVA_SQL_TYPES) >= {MySQLType.parse(text).name for text in spec}


@pytest.mark.parametrize(
    ("mtype", "bare", "full"),
    [
        (MySQLType("int", unsigned=True, length=10), "int unsigned", "int(10) unsigned"),
        (MySQLType("decimal", length=10, decimals=4), "decimal", "decimal(10,4)"),
        (MySQLType("tinyint", length=1), "tinyint", "tinyint(1)"),
        (MySQLType("enum", elements=("a", "it's")), "enum", "enum('a','it''s')"),
        (
            MySQLType("bigint", unsigned=True, zerofill=True, length=20),
            "bigint unsigned zerofill",
            "bigint(20) unsigned zerofill",
        ),
        (MySQLType("datetime", decimals=6), "datetime", "datetime(6)"),
        (MySQLType("year", unsigned=True), "year", "year unsigned"),
        (MySQLType("varbinary", length=16), "varbinary", "varbinary(16)"),
    ],
)
def test_mysql_type_text(mtype: MySQLType, bare: str, full: str) -> None:
    """TiCDC's mysqlType: the base type with unsigned/zerofill (never for year and bit), or with
    content-compatible the whole definition, which the decoder parses back to the same type."""
    assert mysql_type_text(mtype, full=False) == bare
    assert mysql_type_text(mtype, full=True) == full
    assert MySQLType.parse(full) == mtype


def test_go_string_escaping() -> None:
    """Spec, Binary 和 Blob 类型: control characters as \\u00XX except \\t \\n \\r, printable
    characters themselves, & < > escaped, 128-255 themselves. Every byte survives the trip."""
    everything = bytes(range(256))
    written = go_json_string(everything.decode("latin-1"))
    assert json.loads(written).encode("latin-1") == everything
    expected_head = "".join({9: "\\t", 10: "\\n", 13: "\\r"}.get(code, f"\\u{code:04x}") for code in range(32))
    assert written.startswith('"' + expected_head + " !\\\"#$%\\u0026'()")
    assert "\\u003c=\\u003e" in written and "[\\\\]" in written and "\x7f\x80\x81" in written
    assert written.endswith('þÿ"')
    assert go_json_string("a\u2028b\u2029c") == '"a\\u2028b\\u2029c"'
    (value,) = encode([decode_one(message(mysqlType={"b": "varbinary"}, data=[{"b": everything.decode("latin-1")}]))])
    assert decode_one(value).after == {"b": everything}


def test_only_output_updated_columns() -> None:
    types = {name: MySQLType("varchar") for name in ("id", "a", "b")}
    change = RowChange(Op.UPDATE, "d", "t", {"id": "1", "a": None, "b": "x"}, {"id": "1", "a": "y", "b": "x"}, types)
    olds = [orjson.loads(value)["old"] for value in encode([change], only_output_updated_columns=True)]
    assert olds == [[{"a": None}]]  # NULL to a value is a change
    same = RowChange(Op.UPDATE, "d", "t", {"id": "1"}, {"id": "1"}, types)
    for options in ({"only_output_updated_columns": True}, {"content_compatible": True}):
        (value,) = encode([same], **options)
        assert orjson.loads(value)["old"] == [{}]
    (value,) = encode([change])
    assert orjson.loads(value)["old"] == [{"id": "1", "a": None, "b": "x"}]


def test_ddl_and_watermark_encoding() -> None:
    """A DDL's Canal type comes from its meta where it has one, else from its kind; es is the commit
    ts's physical milliseconds unless meta has es; ts is meta's, else 0."""
    foreign = Ddl(DdlKind.CREATE_TABLE, "d", "t", "CREATE TABLE t (a INT)", commit_ts=429918007904436226)
    (value,) = encode([foreign], enable_tidb_extension=True)
    assert value == (
        b'{"id":0,"database":"d","table":"t","pkNames":null,"isDdl":true,"type":"CREATE","es":1640007049196,'
        b'"ts":0,"sql":"CREATE TABLE t (a INT)","sqlType":null,"mysqlType":null,"data":null,"old":null,'
        b'"_tidb":{"commitTs":429918007904436226}}'
    )
    (value,) = encode([Ddl(DdlKind.DROP_DATABASE, "d", "", "DROP DATABASE d")])
    assert orjson.loads(value)["type"] == "QUERY" and "_tidb" not in orjson.loads(value)
    with_meta = Ddl(DdlKind.OTHER, "d", "v", "CREATE VIEW v AS SELECT 1", meta={"type": "CREATE", "es": 7, "ts": 8})
    (value,) = encode([with_meta])
    assert (orjson.loads(value)["type"], orjson.loads(value)["es"], orjson.loads(value)["ts"]) == ("CREATE", 7, 8)


def test_events_canal_json_cannot_carry() -> None:
    types = {"id": MySQLType("int"), "ts": MySQLType("timestamp"), "b": MySQLType("blob"), "e": MySQLType("enum")}
    insert = RowChange(Op.INSERT, "d", "t", None, {"id": 1}, types, commit_ts=None)
    schema = TableSchema("d", "t", (ColumnSchema("id", MySQLType("int")),))
    for event, options, reason in [
        (Watermark(5), {}, "only with enable-tidb-extension=true"),
        (LargeMessageRef(LargeMessageKind.HANDLE_KEY_ONLY, insert), {}, "only with enable-tidb-extension=true"),
        (
            LargeMessageRef(
                LargeMessageKind.CLAIM_CHECK, RowChange(Op.INSERT, "d", "t", None, {"id": 1}, types, commit_ts=1)
            ),
            {"enable_tidb_extension": True},
            "needs the location of the stored message",
        ),
        (insert, {"enable_tidb_extension": True}, "this row change has no commit ts"),
        (Ddl(DdlKind.OTHER, "d", "", "SET x=1"), {"enable_tidb_extension": True}, "this DDL has no commit ts"),
        (Bootstrap(schema), {}, "not Bootstrap"),
        (Heartbeat(1), {}, "not Heartbeat"),
        (RowChange(Op.UPDATE, "d", "t", None, {"id": 1}, types), {}, "an UPDATE needs its before image"),
        (RowChange(Op.DELETE, "d", "t", None, {"id": 1}, types), {}, "a DELETE needs its before image"),
        (RowChange(Op.INSERT, "d", "t", None, {"x": 1}, types), {}, "column 'x' of d.t has no MySQL type"),
        (RowChange(Op.INSERT, "d", "t", None, {"id": 2**31}, types), {}, "2147483648 outside the range of int"),
        (RowChange(Op.INSERT, "d", "t", None, {"id": 1.5}, types), {}, "must be an int, got float"),
        (RowChange(Op.INSERT, "d", "t", None, {"ts": dt.datetime(2024, 1, 1)}, types), {}, "an aware datetime"),
        (RowChange(Op.INSERT, "d", "t", None, {"b": "text"}, types), {}, "a binary value must be bytes, got str"),
        (RowChange(Op.INSERT, "d", "t", None, {"e": "a"}, types), {}, "'a' is not a member of enum"),
        (RowChange(Op.INSERT, "d", "t\ud800", None, {"id": 1}, types), {}, "lone UTF-16 surrogate"),
    ]:
        with pytest.raises(EncodeError, match=re.escape(reason)) as error:
            encode([event], **options)
        assert error.value.format_name == "canal-json"

def test_decoder_follows_each_message_s_own_types_and_keys() -> None:
    """A decoder keeps what it parsed of each table's mysqlType and pkNames across messages; a
    message that changes them (a DDL upstream, another database's table of the same name) is read
    by what it says itself."""
    decoder = CODEC.decoder()

    def one(value: bytes) -> RowChange:
        (event,) = decoder.decode(RawMessage(None, value, ORIGIN))
        assert isinstance(event, RowChange)
        return event

    first = one(message(data=[{"id": "1", "c": "x"}]))
    assert first.after == {"id": 1, "c": "x"} and first.key_columns == ("id",)
    changed = one(message(data=[{"id": "1", "c": "2"}], mysqlType={"id": "varchar", "c": "int"}, pkNames=["c"]))
    assert changed.after == {"id": "1", "c": 2} and changed.key_columns == ("c",)
    assert changed.types == {"id": MySQLType.parse("varchar"), "c": MySQLType.parse("int")}
    other = one(message(data=[{"id": "3", "c": "y"}], database="other", pkNames=None))
    assert other.after == {"id": 3, "c": "y"} and other.key_columns == () and other.database == "other"
    again = one(message(data=[{"id": "4", "c": "z"}]))
    assert again.after == {"id": 4, "c": "z"} and again.key_columns == ("id",)
    with pytest.raises(DecodeError, match=r"data\[0\] column 'id': invalid literal"):
        one(message(data=[{"id": "x", "c": "z"}]))
    with pytest.raises(DecodeError, match=r'"pkNames" must be an array of column names'):
        one(message(pkNames=["id", 1]))


def test_values_the_fast_path_leaves_to_the_converters() -> None:
    """Rows are converted in one pass that passes JSON strings of text columns through; any value
    it does not take as it is goes through the column's converter, which reads it or says why not."""
    types = {"id": "int", "c": "varchar", "j": "json", "d": "double", "e": "enum", "s": "set"}
    row = {"id": "1", "c": "x", "j": {"a": [1]}, "d": True, "e": 2, "s": "5"}
    change = decode_one(message(data=[row], mysqlType=types))
    assert change.after == {"id": 1, "c": "x", "j": '{"a":[1]}', "d": 1.0, "e": 2, "s": 5}
    for column, value, reason in [
        ("c", 5, "data[0] column 'c': expected a string, got the number 5"),
        ("e", 2.5, "data[0] column 'e': expected an integer, got the number 2.5"),
        ("id", "2147483648", "data[0] column 'id': 2147483648 is outside the range of int"),
    ]:
        with pytest.raises(DecodeError) as error:
            decode(message(data=[{**row, column: value}], mysqlType=types))
        assert error.value.reason == reason
    with pytest.raises(DecodeError) as error:
        decode(message("UPDATE", [row], mysqlType=types, old=[{"c": 7}]))
    assert error.value.reason == "old[0] column 'c': expected a string, got the number 7"
    # A column old names and data leaves out is converted from old's value.
    update = decode_one(message("UPDATE", [{"id": "1"}], mysqlType=types, old=[{"id": "1", "c": "was"}]))
    assert update.before == {"id": 1, "c": "was"} and update.after == {"id": 1}


@pytest.mark.parametrize(
    "text",
    [
        "00:00:00", "23:59:59", "23:59:59.999999", "03:19:10.2", "03:19:10.269", "03:19:10.26912",
        "03:19:10.1234567", "100:00:00", "838:59:59.000000", "-01:02:03.5", "24:00:00", "03:60:00",
        "03:19:10,5", "03:19:10+01:00", "03:19:10.5Z", "03:19:10.", "3:19:10", "03:19:1x", "\u0660\u0663:19:10",
    ],
)  # fmt: skip
def test_time_values_read_as_parse_time_reads_them(text: str) -> None:
    """TIME text of the common shape takes a faster parser; every text reads as values.parse_time reads it."""
    encoded = message(data=[{"id": "1", "c": text}], mysqlType={"id": "int", "c": "time"})
    try:
        expected = parse_time(text)
    except ValueError:
        with pytest.raises(DecodeError, match="not a time"):
            decode(encoded)
    else:
        assert decode_one(encoded).after == {"id": 1, "c": expected}
