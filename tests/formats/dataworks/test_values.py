"""DataWorks JSON: values, each DataWorks type and MySQL-typed events from other formats, in property round
trips."""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import json
import math
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cdclake.errors import EncodeError
from cdclake.eventjson import event_from_json, event_to_json
from cdclake.formats import get_codec
from cdclake.formats.dataworks.values import dataworks_type
from cdclake.formats.dataworks.wire import MYSQL_TYPE_OF
from cdclake.model import Bootstrap, ColumnSchema, Op, RowChange, TableSchema, Transaction, TransactionMark
from cdclake.types import Family, MySQLType
from cdclake.values import ZeroTemporal, value_from_text, zone
from tests.formats.dataworks.helpers import (
    CODEC,
    SOURCE,
    SPEC_INSERT,
    SPEC_UPDATE_AFTER,
    SPEC_UPDATE_BEFORE,
    UTC,
    at_ms,
    control,
    decode,
    encode,
)
from tests.strategies import TYPES, rows

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
