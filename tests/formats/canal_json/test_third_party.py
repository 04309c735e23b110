"""Canal-JSON: every third-party vector in vectors/canal/ (Flink CDC, InLong, RisingWave, SeaTunnel,
TiBigData, Paimon's histories), and a check that each of them is read by a test of this package.

Where a vector's source project reads a message differently from the spec (Flink's changelog rows,
RisingWave's upserts), the test names the difference and follows the spec."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterable, Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import pytest

from cdclake.errors import DecodeError
from cdclake.model import Ddl, DdlKind, Event, Op, Origin, RawMessage, RowChange
from cdclake.types import MySQLType
from cdclake.values import to_float32
from tests.formats.canal_json.helpers import (
    CANAL,
    CODEC,
    ORIGIN,
    case,
    changelog,
    decode,
    decode_file,
    decode_one,
    encode,
    java_float,
    message_lines,
    rows_of,
)

# --- third-party producers and consumers --------------------------------------------------------------


def test_flink_cdc_serialization_schema(vectors: Path) -> None:
    """Flink CDC's canal-json writer: no id/es/ts/isDdl/sqlType/mysqlType, full-row old. Asserted
    changelog: +I(1,1) +I(2,2) -D(2,2) -U(1,1) +U(1,x). Untyped string columns are read as longtext."""
    events = decode_file(CANAL / "flink-cdc__CanalJsonSerializationSchemaTest.jsonl")
    assert [(kind, dict(row)) for kind, row in changelog(events)] == [
        ("+I", {"col1": "1", "col2": "1"}),
        ("+I", {"col1": "2", "col2": "2"}),
        ("-D", {"col1": "2", "col2": "2"}),
        ("-U", {"col1": "1", "col2": "1"}),
        ("+U", {"col1": "1", "col2": "x"}),
    ]
    for change in rows_of(events):
        assert (change.database, change.table, change.key_columns) == ("default_schema", "table1", ("col1",))
        assert change.types == {"col1": MySQLType("longtext"), "col2": MySQLType("longtext")}
        assert change.commit_ts is None and change.meta == {}


def test_flink_cdc_pipeline_output(vectors: Path) -> None:
    """Flink CDC's MySQL-to-Kafka pipeline output: 20 messages with typed JSON values and no
    mysqlType. Compared: the sequence of (op, table, id), the changes the sidecar lists, inferred types
    and the end state of both tables. "$databaseName" is the test's placeholder, kept as sent."""
    events = rows_of(decode_file(CANAL / "flink-cdc__e2e__expectedEvents__mysqlToKafka__canal-json.txt"))
    ids = [(change.op.name, change.table, (change.after or change.before or {})["id"]) for change in events]
    assert ids == [
        *[("INSERT", "customers", n) for n in (103, 104, 102, 101)],
        *[("INSERT", "products", n) for n in (107, 108, 103, 105, 109, 101, 106, 102, 104)],
        ("UPDATE", "products", 107),
        ("UPDATE", "products", 106),
        ("INSERT", "products", 111),
        ("INSERT", "products", 110),
        ("UPDATE", "products", 111),
        ("DELETE", "products", 111),
        ("UPDATE", "products", 110),
    ]
    assert {change.database for change in events} == {"$databaseName"}
    weight_107 = events[13]
    assert (weight_107.before or {})["weight"] == 5.3 and (weight_107.after or {})["weight"] == 5.1
    description_106 = events[14]
    assert (description_106.before or {})["description"] == "16oz carpenter's hammer"
    assert (description_106.after or {})["description"] == "18oz carpenter hammer"
    scooter = next(change for change in events if (change.after or {}).get("id") == 101 and change.table == "products")
    assert scooter.types == {
        "id": MySQLType("bigint"),
        "name": MySQLType("longtext"),
        "description": MySQLType("longtext"),
        "weight": MySQLType("double"),
        "enum_c": MySQLType("longtext"),
        "json_c": MySQLType("longtext"),
        "point_c": MySQLType("longtext"),
    }
    rocks = events[4]  # enum_c, json_c, point_c are null: the message does not tell their types
    assert set(rocks.types) == {"id", "name", "description", "weight"}
    assert rocks.after is not None and rocks.after["enum_c"] is None
    assert events[15].types["new_col"] == MySQLType("bigint") and (events[15].after or {})["new_col"] == 1
    products = apply_all(events, "products")
    assert sorted(products) == [101, 102, 103, 104, 105, 106, 107, 108, 109, 110]
    assert (products[110]["description"], products[110]["weight"]) == ("new water resistent white wind breaker", 0.5)
    assert sorted(apply_all(events, "customers")) == [101, 102, 103, 104]


def apply_all(events: Iterable[RowChange], table: str) -> dict[Any, Mapping[str, Any]]:
    """The rows of ``table`` keyed by their single key column after applying ``events`` in order."""
    rows: dict[Any, Mapping[str, Any]] = {}
    for change in events:
        if change.table != table:
            continue
        (key,) = change.key_columns
        if change.before is not None:
            rows.pop(change.before[key], None)
        if change.after is not None:
            rows[change.after[key]] = change.after
    return rows


def test_flink_non_numeric_numbers(vectors: Path) -> None:
    """Flink's allow-non-numeric-numbers test: bare NaN, Infinity, -Infinity (not JSON) in a column
    without mysqlType. Asserted +I(101, ..., NaN), +I(102, ..., Infinity), +I(103, ..., -Infinity)."""
    events = rows_of(decode_file(CANAL / "flink__CanalJsonSerDeSchemaTest_non_numeric_numbers.jsonl"))
    weights = [(change.after or {})["weight"] for change in events]
    assert [(change.after or {})["id"] for change in events] == [101, 102, 103]
    assert weights[0] != weights[0] and weights[1:] == [float("inf"), float("-inf")]
    assert all(change.types["weight"] == MySQLType("double") for change in events)
    assert all((change.database, change.table) == ("", "") for change in events)
    # Re-encoded, they are written as Go's FormatFloat spells them (NaN, +Inf, -Inf) and read back.
    texts = [orjson.loads(value)["data"][0]["weight"] for value in encode(events)]
    assert texts == ["NaN", "+Inf", "-Inf"]
    again = rows_of(decode(b"\n".join(encode(events))))
    assert [(change.after or {})["weight"] for change in again][1:] == weights[1:]


FILTER_TABLE_FILES = [
    "flink__flink-json__canal-data-filter-table.txt",
    "seatunnel__format-json__canal-data-filter-table.txt",
]


@pytest.mark.parametrize("name", FILTER_TABLE_FILES)
def test_flink_and_seatunnel_filter_table(vectors: Path, name: str) -> None:
    """Flink's and SeaTunnel's CanalJsonSerDeSchemaTest (the two files are byte-identical): the
    changelog of mydb.product, the 26 rows SeaTunnel's sidecar lists. Flink and SeaTunnel drop other
    tables and DDL with a regex before parsing; here every message is decoded, and the products
    filtered after. The "project" message is undecodable: its mysqlType says int(11) and its ids are
    "A101" — a message contradicting its own types is bad input (Flink never parses it)."""
    path = CANAL / name
    assert path.read_bytes() == (CANAL / FILTER_TABLE_FILES[0]).read_bytes()
    lines = message_lines(path)
    expected = re.findall(
        r"kind=([+-][IUD]), fields=\[(.*)\]}",
        (CANAL / "seatunnel__format-json__canal-data-filter-table.txt.expected.txt").read_text(),
    )
    assert len(expected) == 26
    decoder = CODEC.decoder()
    events: list[Event] = []
    for number, line in enumerate(lines, start=1):
        message = RawMessage(None, line, Origin(file=name, line=number))
        if b'"table":"project",' in line:
            with pytest.raises(DecodeError, match=r"data\[0\] column 'id': invalid literal for int") as error:
                decoder.decode(message)
            assert error.value.origin == message.origin
            continue
        events += decoder.decode(message)
    products = [
        change
        for change in rows_of(events)
        if re.fullmatch("my.*", change.database) and re.fullmatch("prod.*", change.table)
    ]

    def fields(row: Mapping[str, Any]) -> str:
        cells = [row["id"], row["name"], row["description"], java_float(row["weight"])]
        return ", ".join("null" if cell is None else str(cell) for cell in cells)

    assert [(kind, fields(row)) for kind, row in changelog(products)] == expected
    ddl = [event for event in events if isinstance(event, Ddl)]
    assert [(event.kind, event.table) for event in ddl] == [
        (DdlKind.CREATE_TABLE, "orders"),
        (DdlKind.CREATE_TABLE, "projects"),
    ]
    assert "\n" in ddl[0].sql
    # Flink's testDeserializationWithMetadata, on the first line.
    first = rows_of(decoder.decode(RawMessage(None, lines[0])))
    assert len(first) == 9 and (first[0].database, first[0].table, first[0].key_columns) == ("mydb", "product", ("id",))
    assert len(first[0].types) == 4
    assert (first[0].meta["ts"], first[0].meta["es"]) == (1598944146308, 1598944132000)
    assert first[0].after == {
        "id": 101,
        "name": "scooter",
        "description": "Small 2-wheel scooter",
        "weight": to_float32(3.14),
    }


def test_flink_data_with_init(vectors: Path) -> None:
    """Flink's canal-data-with-init (FLINK-32862; no sidecar): Alibaba Cloud DTS sends its initial
    snapshot as type INIT, read as INSERT with meta type INIT. A column missing from mysqlType
    ("other") gets its type from its values; old {"description": null} says the old value WAS NULL."""
    events = decode_file(CANAL / "flink__flink-json__canal-data-with-init.txt")
    changes = rows_of(events)
    snapshot = [change for change in changes if change.meta.get("type") == "INIT"]
    assert len(snapshot) == 9 and all(change.op is Op.INSERT for change in snapshot)
    assert [change.origin.index for change in snapshot if change.origin] == list(range(9))
    assert snapshot[0].types["other"] == MySQLType("longtext") and (snapshot[0].after or {})["other"] == "val1"
    hammer = next(change for change in changes if change.op is Op.UPDATE)
    assert hammer.before == {
        "id": 106,
        "name": "hammer",
        "description": None,
        "weight": 1.0,
        "other": "val2",
    }
    assert (hammer.after or {})["description"] == "18oz carpenter hammer" and (hammer.after or {})["other"] == "val0"
    assert [event.kind for event in events if isinstance(event, Ddl)] == [DdlKind.CREATE_TABLE]
    products = apply_all(changes, "products2")
    assert {key: (row["description"], row["weight"]) for key, row in products.items()} == {
        101: ("Small 2-wheel scooter", to_float32(5.17)),
        104: ("12oz carpenter's hammer", to_float32(0.75)),
        105: ("14oz carpenter's hammer", to_float32(0.875)),
        106: ("18oz carpenter hammer", 1.0),
        107: ("box of assorted rocks", to_float32(5.1)),
        108: ("water resistent black wind breaker", to_float32(0.1)),
        109: ("24 inch spare tire", to_float32(22.2)),
        110: ("new water resistent white wind breaker", 0.5),
    }


@pytest.mark.parametrize(
    "name",
    ["inlong__CanalJsonDynamicSchemaFormatTest.jsonl", "inlong__CanalJsonDynamicSchemaFormatTest.original-pretty.json"],
)
def test_inlong_partial_old(vectors: Path, name: str) -> None:
    """InLong: id a JSON number, mysqlType in upper case, old {"weight": "5.15"}. Asserted
    -U(111, scooter, Big 2-wheel scooter, 5.15f) +U(..., 5.18f), primary key [id]. The pretty-printed
    original is one message over many lines."""
    update = decode_one((CANAL / name).read_bytes())
    common = {"id": 111, "name": "scooter", "description": "Big 2-wheel scooter"}
    assert update.before == {**common, "weight": to_float32(5.15)}
    assert update.after == {**common, "weight": to_float32(5.18)}
    assert update.key_columns == ("id",) and update.types["id"] == MySQLType("int")
    assert update.types["name"] == MySQLType("varchar", length=255)
    assert update.meta == {"es": 1589373560000, "id": 9, "ts": 1589373560798}


def test_inlong_format_json_data(vectors: Path) -> None:
    """InLong's canal-json-inlong variant: extra opType/batchId/updateBefore fields (kept in meta),
    typed ids. Asserted rows +I(2, xixi), +I(1, oooooo), +I(3, HAHA), batch ids 0/1/2, es 0."""
    changes = rows_of(decode_file(CANAL / "inlong__format-json-v1.18__canal-json-inlong-data.txt"))
    assert [change.after for change in changes] == [
        {"id": 2, "name": "xixi"},
        {"id": 1, "name": "oooooo"},
        {"id": 3, "name": "HAHA"},
    ]
    assert [change.meta["batchId"] for change in changes] == [0, 1, 2]
    assert changes[0].meta == {"opType": "INSERT", "es": 0, "batchId": 0, "updateBefore": None, "ts": 1651208731718}
    assert changes[0].types == {"name": MySQLType("varchar", length=63), "id": MySQLType("bigint", length=20)}
    assert all((change.database, change.table, change.key_columns) == ("TEST", "TEST", ("id",)) for change in changes)


@pytest.mark.parametrize(
    "name",
    ["paimon-history__CanalRecordParserTest.jsonl", "paimon-history__CanalRecordParserTest.original-pretty.json"],
)
def test_paimon_history_pk_names_null(vectors: Path, name: str) -> None:
    """Paimon's deleted CanalRecordParserTest: pkNames null must not fail; gtid "" stays in meta."""
    update = decode_one((CANAL / name).read_bytes())
    assert update.key_columns == () and update.meta["gtid"] == ""
    assert update.before == {**(update.after or {}), "LAST_ACTIVE_TIMESTAMP": 1696939694927}
    assert (update.after or {})["LAST_ACTIVE_TIMESTAMP"] == 1696939709931


def test_risingwave_multi_row_messages(vectors: Path) -> None:
    """RisingWave's canal_json_double_field: 2-row INSERT, a 2-row UPDATE that changes the key v1,
    2-row DELETE. RisingWave upserts an UPDATE's new rows and so would end with (1,2),(3,4); the spec
    sends the before image, so the rows move and the DELETE leaves the table empty."""
    events = rows_of(decode_file(CANAL / "risingwave__e2e__canal_json_double_field.1"))
    assert [(change.op, change.before, change.after) for change in events] == [
        (Op.INSERT, None, {"v1": 1, "v2": 2}),
        (Op.INSERT, None, {"v1": 3, "v2": 4}),
        (Op.UPDATE, {"v1": 1, "v2": 2}, {"v1": 5, "v2": 6}),
        (Op.UPDATE, {"v1": 3, "v2": 4}, {"v1": 7, "v2": 8}),
        (Op.DELETE, {"v1": 5, "v2": 6}, None),
        (Op.DELETE, {"v1": 7, "v2": 8}, None),
    ]
    assert [change.origin.index for change in events if change.origin] == [0, 1, 0, 1, 0, 1]
    keyed = [RowChange(c.op, c.database, c.table, c.before, c.after, c.types, ("v1",)) for c in events]
    assert apply_all(keyed, "demo") == {}


def test_risingwave_parser_tests(vectors: Path) -> None:
    """RisingWave's simd_json_parser tests. Line 1 is case 16's message (checked there). Line 2: an
    UPDATE with pkNames null and partial old; RisingWave emits it as an upsert of the new row and reads
    the BOOLEAN is_adult as false, here it is MySQL's tinyint(1) holding 0. Line 3: two INSERT rows."""
    lines = message_lines(CANAL / "risingwave__simd_json_parser_tests.jsonl")
    assert json.loads(lines[0]) == json.loads(case("16")["kafka_value_utf8"])
    update = decode_one(lines[1])
    after = {
        "id": 1,
        "name": "mike",
        "is_adult": 0,
        "balance": Decimal("1500.62"),
        "reg_time": dt.datetime(2018, 1, 1, 0, 0, 1, tzinfo=dt.UTC),
        "win_rate": 0.65,
    }
    assert update.op is Op.UPDATE and update.after == after and update.key_columns == ()
    assert update.before == {**after, "balance": Decimal("1000.62")}
    assert update.types["is_adult"] == MySQLType("tinyint", length=1)
    assert [change.after for change in rows_of(decode(lines[2]))] == [{"v1": 1, "v2": 2}, {"v1": 3, "v2": 4}]


def test_seatunnel_inline_error_cases(vectors: Path) -> None:
    """SeaTunnel's negative inputs, each an error; and a null or empty value decodes to nothing."""
    reasons = [
        "not JSON",
        'no "type"',
        '"data" of a INSERT message must be an array of rows, got null',
        "unknown type 'XX'",
    ]
    lines = message_lines(CANAL / "seatunnel__CanalJsonSerDeSchemaTest_inline_error_cases.jsonl")
    for line, reason in zip(lines, reasons, strict=True):
        with pytest.raises(DecodeError, match=re.escape(reason)) as error:
            decode(line)
        assert error.value.format_name == "canal-json" and error.value.origin == ORIGIN
    assert CODEC.decoder().decode(RawMessage(None, None)) == [] and decode(b"") == []


def test_seatunnel_kafka_e2e(vectors: Path) -> None:
    """SeaTunnel's KafkaFormatIT: a real canal-server capture. Asserted: the three DDL messages emit no
    row, the sink output (an UPDATE as DELETE of the before image and INSERT of the new one) and the final
    table."""
    events = decode_file(CANAL / "seatunnel__kafka-e2e__canal_data.txt")
    ddl = [event for event in events if isinstance(event, Ddl)]
    assert [(event.kind, event.meta["type"]) for event in ddl] == [
        (DdlKind.CREATE_DATABASE, "QUERY"),
        (DdlKind.CREATE_TABLE, "CREATE"),
        (DdlKind.ALTER_TABLE, "ALTER"),
    ]
    sidecar = (CANAL / "seatunnel__kafka-e2e__canal_data.txt.expected.txt").read_text()
    expected = [json.loads(line) for line in sidecar.splitlines() if line.startswith('{"data"')]
    assert len(expected) == 14
    output = [
        {"data": dict(row), "type": "INSERT" if kind in ("+I", "+U") else "DELETE"} for kind, row in changelog(events)
    ]
    assert output == expected
    table = apply_all(rows_of(events), "products")
    final = re.findall(r"\((\d+), ([^,]+), ([^,]+), ([\d.]+)\)", sidecar.split("final PostgreSQL table")[1])
    assert len(final) == 8
    assert sorted((row["id"], row["name"], row["description"], row["weight"]) for row in table.values()) == sorted(
        (int(key), name, description, weight) for key, name, description, weight in final
    )


def test_tibigdata_case_of_names(vectors: Path) -> None:
    """TiBigData: table test_Cdc and column Name differ in case from its reader's schema, which it
    matches case-insensitively; names are kept exactly as sent. Asserted row +I(id=1, name=zs)."""
    insert = decode_one((CANAL / "tibigdata__TiDBCanalJsonDeserializationSchemaTest.jsonl").read_bytes())
    assert (insert.table, insert.after) == ("test_Cdc", {"Name": "zs", "id": 1})

def test_every_canal_vector_is_read_by_a_test(vectors: Path) -> None:
    """Each message file of vectors/canal/ is named by a test of this package (Paimon's are found through
    paimon_files and test_paimon_file_contents, which globs them all); the expected-result sidecars are
    what those tests assert, transcribed or parsed."""
    source = "".join(path.read_text() for path in Path(__file__).parent.glob("*.py"))
    unused = [
        path.name
        for path in sorted(CANAL.iterdir())
        if path.name not in source
        and not path.name.startswith("paimon__canal__")
        and "expected" not in path.name.lower()
    ]
    assert unused == []
