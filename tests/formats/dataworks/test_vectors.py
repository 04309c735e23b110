"""DataWorks JSON: Apache Paimon's aliyun-json samples (the only public DataWorks messages) and the
spec's own examples, decoded and encoded back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from cdclake.model import Heartbeat, Op, Origin, RowChange
from cdclake.types import MySQLType
from tests.formats.dataworks.helpers import (
    ALIYUN,
    ROW_11,
    SPEC_DELETE,
    SPEC_HEARTBEAT,
    SPEC_INSERT,
    SPEC_OVERALL,
    SPEC_TYPES,
    SPEC_UPDATE_AFTER,
    SPEC_UPDATE_BEFORE,
    SPEC_UPDATE_IN_ONE,
    VECTOR_FILES,
    at_ms,
    decode,
    encode,
    vector_json,
)

# --- Apache Paimon's aliyun-json samples (the only public DataWorks messages) --------------------------


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
