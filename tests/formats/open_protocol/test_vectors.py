"""Open Protocol: every third-party vector of the format decodes to what its sidecar says (the binary
fixtures of tiflow and TiBigData, the 27-column row, ticdc-cases 01-06, the documentation's event stream);
where a vector follows older rules than the spec, the test says which and what current rules give."""

from __future__ import annotations

import base64
import datetime as dt
import json
import struct
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from cdclake.errors import DecodeError
from cdclake.formats.open_protocol.text import go_unquote
from cdclake.formats.open_protocol.wire import split_batch
from cdclake.model import Ddl, DdlKind, Op, RawMessage, RowChange, Watermark
from cdclake.types import MySQLType
from cdclake.values import to_float32
from tests.formats.open_protocol.helpers import (
    CASES,
    OPEN,
    ORIGIN,
    bin_pair,
    case,
    case_message,
    decode,
    decode_log,
    decode_one,
    docs_stream,
    frame,
    message,
    parse_log,
    row_key,
)

# --- the binary fixtures (tiflow examples/java, TiBigData) --------------------------------------------

TIFLOW = "tiflow__examples-java__data__"
TIBIGDATA = "tibigdata__ticdc__json__"
DECODED_SIDECARS = {
    TIFLOW: "tiflow__examples-java__data__DECODED.json",
    TIBIGDATA: "tibigdata__ticdc__json__DECODED.json",
}
# The spec's DDL type-code table (DDL 的类型码): the action type decides the kind, not the query text
# (the tiflow fixture is synthetic: "create table a" is sent with type 1, Create Schema).
SPEC_DDL_KINDS = {1: DdlKind.CREATE_DATABASE, 2: DdlKind.DROP_DATABASE, 3: DdlKind.CREATE_TABLE}


def sidecar_entries() -> Iterator[tuple[str, dict[str, Any]]]:
    for prefix, sidecar in DECODED_SIDECARS.items():
        for entry in json.loads((OPEN / sidecar).read_text()):
            yield prefix, entry


SIDECAR_ENTRIES = list(sidecar_entries())
SIDECAR_IDS = [f"{prefix.split('__')[0]}:{entry['key_file']}" for prefix, entry in SIDECAR_ENTRIES]


def fixture_message(prefix: str, entry: dict[str, Any]) -> RawMessage:
    key_name = entry["key_file"].removeprefix("key/")
    value_name = entry["value_file"].removeprefix("value/")
    return bin_pair(prefix, key_name, value_name)


@pytest.mark.parametrize(("prefix", "entry"), SIDECAR_ENTRIES, ids=SIDECAR_IDS)
def test_binary_fixture_framing_matches_its_sidecar(vectors: Path, prefix: str, entry: dict[str, Any]) -> None:
    msg = fixture_message(prefix, entry)
    assert msg.key is not None and struct.unpack(">Q", msg.key[:8])[0] == entry["version"] == 1
    frames = split_batch(msg.key, msg.value)
    assert [k.decode() for k, _ in frames] == entry["keys"]
    assert [v.decode() for _, v in frames] == entry["values"]


@pytest.mark.parametrize(("prefix", "entry"), SIDECAR_ENTRIES, ids=SIDECAR_IDS)
def test_binary_fixture_decodes_as_its_sidecar_says(vectors: Path, prefix: str, entry: dict[str, Any]) -> None:
    msg = fixture_message(prefix, entry)
    keys = [json.loads(k) for k in entry["keys"]]
    values = [json.loads(v) if v else None for v in entry["values"]]
    if entry["key_file"].startswith("key/row"):
        if keys:
            assert_rejects_synthetic_tinyint(msg)
        else:
            assert decode(msg) == []
        return
    events = decode(msg)
    assert len(events) == len(keys)  # ddl_2, row_2, rts_2: a version-only key and an empty value hold none
    for index, (event, key, value) in enumerate(zip(events, keys, values, strict=True)):
        assert event.origin == msg.origin.at(index)
        if key["t"] == 3:
            assert event == Watermark(key["ts"], msg.origin.at(index))
            continue
        assert isinstance(event, Ddl)
        assert (event.commit_ts, event.database, event.sql) == (key["ts"], key["scm"], value["q"])
        # A database-level DDL has no "tbl" (TiBigData's JsonDecoderTest expects table null): "" here.
        assert event.table == key.get("tbl", "")
        assert event.kind is SPEC_DDL_KINDS[value["t"]]
        assert event.meta == {"ddl_type": value["t"]}


def assert_rejects_synthetic_tinyint(msg: RawMessage) -> None:
    """The row fixtures send {"t":1,"v":"aa"}: a TINYINT column whose value is a string. The spec's type
    table carries TINYINT as a JSON number ({"t":1,"v":1}), and TiCDC's own decoder panics on a string
    there; the Java tests that use these files never look at column values. So the decoder refuses the
    value, naming the event and the column."""
    with pytest.raises(DecodeError) as caught:
        decode(msg)
    assert (
        caught.value.reason == "event 0: column 'col1' in \"u\": expected tinyint, an integer in [-128, 127], got 'aa'"
    )
    assert caught.value.origin == msg.origin.at(0)


def test_row_fixture_keys_decode_once_the_values_are_numbers(vectors: Path) -> None:
    """Everything else in the 4-event row batch is sound: with TINYINT values the spec allows, its keys
    give 4 inserts, the last into a partition table (``ptn`` 6), as the sidecars list them."""
    msg = bin_pair(TIFLOW, "row_key_1", "row_value_1")
    keys = [key for key, _ in split_batch(msg.key, msg.value)]
    numbers = [b'{"u":{"col1":{"t":1,"v":%d}}}' % n for n in (1, 2, 2, 3)]
    events = decode(message(keys, numbers))
    assert [(e.op, e.commit_ts, e.database, e.table, e.after) for e in events] == [
        (Op.INSERT, 1, "a", "b", {"col1": 1}),
        (Op.INSERT, 2, "a", "b", {"col1": 2}),
        (Op.INSERT, 3, "a", "b", {"col1": 2}),
        (Op.INSERT, 4, "a", "c", {"col1": 3}),
    ]
    assert [e.meta.get("ptn") for e in events] == [None, None, None, 6]
    assert events[0].meta == {"type_codes": {"col1": 1}, "flags": {"col1": 0}}  # "f" left out: Go's 0


def test_tibigdata_timestamps_never_decrease_across_files(vectors: Path) -> None:
    # JsonDecoderTest carries lastTs from file to file and asserts each event's ts is not below it.
    for kind in ("ddl", "rts"):
        stamps = []
        for index in range(3):
            events = decode(bin_pair(TIBIGDATA, f"{kind}_{index}", f"{kind}_{index}"))
            stamps += [e.commit_ts if isinstance(e, Ddl) else e.ts for e in events]
        assert stamps == sorted(stamps)
        assert len(stamps) == {"ddl": 5, "rts": 4}[kind]


# --- the 27-column row (TiBigData row.json; ticdc-cases/05) -------------------------------------------

ALL_CODES_TYPES = {
    "c1": "tinyint", "c2": "smallint", "c3": "int", "c4": "float", "c5": "double", "c7": "timestamp",
    "c8": "bigint", "c9": "mediumint", "c10": "date", "c11": "time", "c12": "datetime", "c13": "year",
    "c14": "date", "c15": "varchar", "c16": "bit", "c17": "json", "c18": "decimal", "c19": "enum",
    "c20": "set", "c21": "tinytext", "c22": "mediumtext", "c23": "longtext", "c24": "text",
    "c25": "varchar", "c26": "char", "c27": "geometry",
}  # fmt: skip


def expected_column(name: str, expected: dict[str, Any], value: Any) -> None:
    """Check one decoded column against ticdc-cases/05's ``expected`` entry."""
    if "decoded_utf8_hex" in expected:  # CHAR/VARCHAR without BinaryFlag: text
        assert value.encode().hex() == expected["decoded_utf8_hex"]
    elif "decoded_bytes_hex" in expected:
        # 249-252 with f=0 are the TEXT types: the base64 bytes, read as UTF-8 text.
        assert isinstance(value, str) and value.encode().hex() == expected["decoded_bytes_hex"]
    elif "decoded_decimal" in expected:
        assert isinstance(value, Decimal) and str(value) == expected["decoded_decimal"]
    elif "decoded_as_given_flag_0" in expected:
        # t=253 with f=0 is a VARCHAR: the escaped text stays as it is. With BinaryFlag it would be Go-quoted
        # bytes, and unquoting the very same text gives the PNG header the sidecar names.
        assert value == expected["decoded_as_given_flag_0"]
        assert go_unquote(value).hex() == expected["decoded_if_flag_has_BinaryFlag_0x01"]
    else:
        want = expected["decoded"]
        kind = ALL_CODES_TYPES.get(name)
        if kind == "float":
            want = to_float32(want)  # "Go decodes to float32"
        elif kind == "timestamp":  # wall clock in the producer's zone, UTC by default
            want = dt.datetime.fromisoformat(want).replace(tzinfo=dt.UTC)
        elif kind == "date":
            want = dt.date.fromisoformat(want)
        elif kind == "datetime":
            want = dt.datetime.fromisoformat(want)
        elif kind == "time":
            hours, minutes, seconds = map(int, want.split(":"))
            want = dt.timedelta(hours=hours, minutes=minutes, seconds=seconds)
        assert value == want, name


def check_all_type_codes_row(row: RowChange) -> None:
    case = json.loads((CASES / "05_open_value_all_type_codes.json").read_text())["expected"]
    assert row.op is Op.INSERT  # "u" without "p"
    assert set(row.after or {}) == set(case["columns"])
    for name, expected in case["columns"].items():
        expected_column(name, expected, (row.after or {})[name])
    # Type code 6 (NULL) tells no type: the column is in the row, NULL, and not in ``types``.
    assert {name: t.name for name, t in row.types.items()} == ALL_CODES_TYPES
    assert row.meta["type_codes"]["c6"] == 6
    # Every column says "h":true but "f":0: with "f" present the flags decide, and no flag marks a key.
    assert row.key_columns == ()


def test_tibigdata_row_json_decodes_every_type_code(vectors: Path) -> None:
    # RowColumnTest frames row.json as one 8-byte-length value; the key is ours.
    value = (OPEN / "tibigdata__ticdc__json__row.json").read_bytes()
    check_all_type_codes_row(decode_one(row_key(), value))


def test_tibigdata_row_json_timestamp_follows_the_producer_zone(vectors: Path) -> None:
    value = (OPEN / "tibigdata__ticdc__json__row.json").read_bytes()
    row = decode_one(row_key(), value, tz="+08:00")
    assert row.after["c7"] == dt.datetime(1973, 12, 30, 7, 30, tzinfo=dt.UTC)
    assert row.after["c12"] == dt.datetime(2015, 12, 20, 23, 58, 58)  # DATETIME has no zone


# --- ticdc-cases 01-06 --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "01_open_batch_4_row_events.json",
        "02_open_batch_3_ddl_events.json",
        "03_open_batch_3_resolved_events.json",
        "04_open_empty_batch.json",
    ],
)
def test_binary_case_framing(vectors: Path, name: str) -> None:
    data = case(name)
    msg = case_message(data)
    frames = split_batch(msg.key, msg.value)
    assert [k.decode() for k, _ in frames] == data["framing_decoded"]["event_keys_utf8"]
    assert [v.decode() for _, v in frames] == data["framing_decoded"]["event_values_utf8"]


def test_case_01_row_batch(vectors: Path) -> None:
    # The same bytes as the tiflow row_key_1 fixture: the case notes that "a tolerant decoder should pass
    # the JSON value through"; the spec's TINYINT is a number, so this decoder names the bad value instead.
    assert_rejects_synthetic_tinyint(case_message(case("01_open_batch_4_row_events.json")))


def test_case_02_ddl_batch(vectors: Path) -> None:
    data = case("02_open_batch_3_ddl_events.json")
    events = decode(case_message(data))
    assert [(e.commit_ts, e.database, e.table, e.sql, e.meta["ddl_type"]) for e in events] == [
        (x["commitTs"], x["schema"], x["table"], x["query"], x["ddl_action_type"]) for x in data["expected_events"]
    ]


def test_case_03_resolved_batch(vectors: Path) -> None:
    data = case("03_open_batch_3_resolved_events.json")
    events = decode(case_message(data))
    assert [e.ts for e in events] == [x["resolvedTs"] for x in data["expected_events"]]
    assert [e.origin.index for e in events] == [0, 1, 2]


def test_case_04_empty_batch(vectors: Path) -> None:
    assert decode(case_message(case("04_open_empty_batch.json"))) == []


def test_case_05_all_type_codes(vectors: Path) -> None:
    data = case("05_open_value_all_type_codes.json")
    framed_value = bytes.fromhex(data["framed_value_hex_as_used_by_test"])
    msg = RawMessage(struct.pack(">Q", 1) + frame(row_key().encode()), framed_value)
    (row,) = decode(msg)
    check_all_type_codes_row(row)


# --- the documentation's event stream -----------------------------------------------------------------


def test_docs_event_stream_decodes(vectors: Path) -> None:
    """docs-cn__ticdc-open-protocol__EXPECTED.txt, log by log."""
    events = docs_stream()
    create = "CREATE TABLE test.t1(id int primary key, val varchar(16))"
    for line in (1, 3):  # the DDL, broadcast to both partitions; type 3 = Create Table
        assert (events[line].kind, events[line].sql, events[line].commit_ts) == (
            DdlKind.CREATE_TABLE,
            create,
            415508856908021766,
        )
        assert (events[line].database, events[line].table) == ("test", "t1")
    for line, ts in (
        (2, 415508856908021766),
        (4, 415508856908021766),
        (13, 415508881038376963),
        (14, 415508881038376963),
    ):
        assert events[line] == Watermark(ts, ORIGIN.at(0))
    # The columns have "h" but no "f" (written before flags existed): "h":true marks the handle key.
    rows = {line: events[line] for line in (5, 6, 7, 8, 9, 10, 11, 12)}
    assert all(r.key_columns == ("id",) and r.types["id"] == MySQLType("int") for r in rows.values())
    assert [(r.op, r.commit_ts, r.after) for r in (rows[5], rows[6], rows[7])] == [
        (Op.INSERT, 415508878783938562, {"id": 1, "val": "aa"}),
        (Op.INSERT, 415508878783938562, {"id": 2, "val": "bb"}),  # insert + update in one txn: one event
        (Op.INSERT, 415508878783938562, {"id": 3, "val": "cc"}),
    ]
    assert rows[8] == rows[7]  # a duplicate (at-least-once delivery)
    assert [(r.op, r.before, r.after) for r in (rows[9], rows[10])] == [
        (Op.DELETE, {"id": 1}, None),  # deletes carry the handle key only
        (Op.DELETE, {"id": 2}, None),
    ]
    # Logs 11 and 12 show VARCHAR as base64 ("ZGQ=" is "dd", "ZWU=" is "ee"), as producers wrote it before
    # Aug 2020; the spec's type table (VARCHAR 15: UTF-8 text) makes them the text "ZGQ=" and "ZWU=".
    assert (rows[11].op, rows[11].after) == (Op.INSERT, {"id": 3, "val": "ZGQ="})
    assert (rows[12].op, rows[12].after) == (Op.INSERT, {"id": 4, "val": "ZWU="})  # PK change: delete + insert
    assert base64.b64decode(rows[11].after["val"]) == b"dd"


def test_docs_event_stream_log_gives_the_same_events(vectors: Path) -> None:
    lines = (OPEN / "docs-cn__ticdc-open-protocol__event-stream-log.txt").read_text().splitlines()
    parsed = parse_log(lines)
    assert sorted(parsed) == list(range(1, 15))
    assert [parsed[n][0] for n in sorted(parsed)] == [0, 0, 1, 1, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1]
    assert decode_log(parsed) == docs_stream()


def test_case_06_english_docs_stream(vectors: Path) -> None:
    """The English page (ticdc-cases/06) shows base64 VARCHAR in every row log (pre-2020 rules)."""
    data = case("06_open_docs_event_stream_legacy.json")
    events = decode_log(parse_log(data["log_lines"]))
    for expected in data["expected"]:
        event = events[expected["line"]]
        if expected.get("type") == "DDL":
            assert (event.commit_ts, event.database, event.table, event.sql, event.meta["ddl_type"]) == (
                expected["commitTs"],
                expected["schema"],
                expected["table"],
                expected["query"],
                expected["ddl_action_type"],
            )
        elif expected.get("type") == "RESOLVED":
            assert event.ts == expected["resolvedTs"]
        elif "val_legacy_base64" in expected:
            # Current rules: the text as sent; the old producer meant its base64-decoded bytes.
            assert event.after == {"id": expected["id"], "val": expected["val_legacy_base64"]}
            assert base64.b64decode(event.after["val"]).hex() == expected["val_bytes_hex"]
        elif "pre_image" in expected:
            assert (event.op, event.before, event.commit_ts) == (Op.DELETE, expected["pre_image"], expected["commitTs"])
    assert events[8] == events[7]
    assert (events[12].op, events[12].after["id"]) == (Op.INSERT, 4)
