"""TiCDC Open Protocol codec.

What the tests prove, in order: every third-party vector of the format decodes to what its sidecar
says (and where a vector follows older rules than the spec, the test says which and what current
rules give); the encoder writes TiCDC's own asserted messages byte for byte, from decoded events and
from events built by hand; Go's string quoting is reproduced exactly; every type of tests/strategies.py
survives encode -> decode as far as the format carries it; the options (old value, updated columns
only, compression, batching) do what TiCDC does; and bad or mutated input only ever raises DecodeError
that says what, where and in which event.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import random
import re
import struct
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdclake.errors import DecodeError, EncodeError, OptionError
from cdclake.formats import get_codec
from cdclake.formats.open_protocol.text import _GO_UNQUOTE_RE, _go_unescape, go_quote, go_unquote, json_float
from cdclake.formats.open_protocol.wire import split_batch
from cdclake.model import (
    Bootstrap,
    Ddl,
    DdlKind,
    LargeMessageKind,
    LargeMessageRef,
    Op,
    Origin,
    RawMessage,
    RowChange,
    TableSchema,
    Watermark,
)
from cdclake.types import Family, MySQLType
from cdclake.values import ZeroTemporal, enum_index, set_bits, to_float32
from tests.conftest import VECTORS
from tests.fuzzing import mutate
from tests.strategies import TYPES, nullable_values_of, rows, values_of

CODEC = get_codec("open")
OPEN = VECTORS / "ticdc-open"
CASES = VECTORS / "ticdc-cases"
ORIGIN = Origin(topic="cdc", partition=3, offset=42)


def frame(data: bytes) -> bytes:
    return struct.pack(">Q", len(data)) + data


def message(keys: list[bytes], values: list[bytes], version: int = 1) -> RawMessage:
    """An Open Protocol message holding the given event keys and values, framed as TiCDC frames them."""
    key = struct.pack(">Q", version) + b"".join(frame(k) for k in keys)
    return RawMessage(key, b"".join(frame(v) for v in values), ORIGIN)


def decode(msg: RawMessage, **options: Any) -> list[Any]:
    return CODEC.decoder(**options).decode(msg)


def decode_one(key: str | bytes, value: str | bytes, **options: Any) -> Any:
    as_bytes = [part.encode() if isinstance(part, str) else part for part in (key, value)]
    (event,) = decode(message([as_bytes[0]], [as_bytes[1]]), **options)
    return event


def encode(events: list[Any], **options: Any) -> list[RawMessage]:
    return CODEC.encoder(**options).encode(events)


def row_key(ts: int = 1, schema: str = "test", table: str = "t") -> str:
    return json.dumps({"ts": ts, "scm": schema, "tbl": table, "t": 1}, separators=(",", ":"))


def bin_pair(prefix: str, key_name: str, value_name: str) -> RawMessage:
    key = (OPEN / f"{prefix}key__{key_name}.bin").read_bytes()
    value = (OPEN / f"{prefix}value__{value_name}.bin").read_bytes()
    return RawMessage(key, value, Origin(file=f"{prefix}{key_name}"))


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


def case(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((CASES / name).read_text())
    return data


def case_message(data: dict[str, Any]) -> RawMessage:
    return RawMessage(bytes.fromhex(data["kafka_key_hex"]), bytes.fromhex(data["kafka_value_hex"]), ORIGIN)


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

LOG_LINE = re.compile(r'(\d+)\. \[partition=(\d+)\] \[key="((?:[^"\\]|\\.)*)"\] \[value=(?:"((?:[^"\\]|\\.)*)")?\]')


def parse_log(lines: list[str]) -> dict[int, tuple[int, bytes, bytes]]:
    """The docs' log lines: Go %q-quoted key and value per event, unquoted as Go would."""
    parsed = {}
    for line in lines:
        match = LOG_LINE.fullmatch(line.strip())
        assert match is not None, line
        parsed[int(match[1])] = (int(match[2]), go_unquote(match[3]), go_unquote(match[4] or ""))
    return parsed


def decode_log(events: dict[int, tuple[int, bytes, bytes]]) -> dict[int, Any]:
    return {line: decode_one(key, value) for line, (_, key, value) in events.items()}


def docs_stream() -> dict[int, Any]:
    records = [
        json.loads(line)
        for line in (OPEN / "docs-cn__ticdc-open-protocol__event-stream.jsonl").read_text().splitlines()
    ]
    return decode_log({r["log"]: (r["partition"], r["key"].encode(), r["value"].encode()) for r in records})


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


# --- TiCDC's encoder expectations (pingcap/ticdc codec_test.go) ---------------------------------------


def codec_test_records() -> list[dict[str, Any]]:
    return [json.loads(line) for line in (OPEN / "ticdc__open__codec_test.jsonl").read_text().splitlines()]


CODEC_TEST_RECORDS = codec_test_records()


def record(test: str) -> dict[str, Any]:
    return next(r for r in CODEC_TEST_RECORDS if r["test"] == test)


def literal_message(record: dict[str, Any]) -> RawMessage:
    """The Kafka message the asserted key/value JSON travels in. TestOnlyOutputUpdatedEvent asserts the
    value only; its key is the other tests' ts-1 row key."""
    key = (record["key"] or row_key()).encode()
    value = record.get("value", "").encode()
    return RawMessage(struct.pack(">Q", 1) + frame(key), frame(value))


@pytest.mark.parametrize("literal", CODEC_TEST_RECORDS, ids=[r["test"] for r in CODEC_TEST_RECORDS])
def test_ticdc_literal_decodes_and_encodes_back_byte_for_byte(vectors: Path, literal: dict[str, Any]) -> None:
    msg = literal_message(literal)
    options = {"only_output_updated_columns": literal["test"] == "TestOnlyOutputUpdatedEvent"}
    assert encode(decode(msg), **options) == [msg]


def ddl_columns(ddl: str) -> dict[str, tuple[MySQLType, bool]]:
    """Column name -> (type, is primary key) from the test's CREATE TABLE."""
    body = re.fullmatch(r"create table test\.t\((.*)\)", ddl)
    assert body is not None
    columns = {}
    for definition in body[1].split(", "):
        name, _, rest = definition.partition(" ")
        type_text = rest.removesuffix(" primary key")
        columns[name] = (MySQLType.parse(type_text), type_text != rest)
    return columns


def hand_built_row(
    literal: dict[str, Any],
    op: Op,
    ts: int,
    *,
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
) -> RowChange:
    """A row of the test's table, its types and key parsed from the CREATE TABLE; columns not given are NULL."""
    columns = ddl_columns(literal["ddl"][0])

    def full(image: dict[str, Any] | None) -> dict[str, Any] | None:
        return None if image is None else {name: image.get(name) for name in columns}

    types = {name: mysql_type for name, (mysql_type, _) in columns.items()}
    key = tuple(name for name, (_, primary) in columns.items() if primary)
    return RowChange(op, "test", "t", full(before), full(after), types, key, ts)


# The values of TestBasicType's INSERT statement, column by column (every other column is NULL).
BASIC_TYPE_VALUES: dict[str, Any] = {
    "a": 1, "c": 1, "e": -1, "g": 123, "i": to_float32(153.123), "k": 153.123,
    "m": dt.datetime(1973, 12, 30, 15, 30, tzinfo=dt.UTC), "o": 123, "q": 123, "s": dt.date(2000, 1, 1),
    "u": dt.timedelta(hours=23, minutes=59, seconds=59), "w": dt.datetime(2015, 12, 20, 23, 58, 58), "y": 1970,
    "aa": "测试", "ac": bytes.fromhex("0102030405060708090A"), "ae": 81, "ag": '{"key1": "value1"}',
    "ai": Decimal("129012.12"), "ak": "a", "am": "b", "ao": "5rWL6K+VdGV4dA==",
    "aq": bytes.fromhex("89504E470D0A1A0A"), "as1": "5rWL6K+VdGV4dA==", "au": bytes.fromhex("4944330300000000"),
    "aw": "5rWL6K+VdGV4dA==", "ay": bytes.fromhex("504B0304140000000800"), "ba": "5rWL6K+VdGV4dA==",
    "bc": bytes.fromhex("255044462D312E34"), "be": "Alice", "bg": bytes.fromhex("0102030405060708090A"),
}  # fmt: skip


# Events built by hand, without meta: type codes and flags come from the column types and the key, as
# TiDB sets them (f=11 binary|handle|PK for a tinyint PK, 65 nullable|binary, 64 text, 193 year and bit).


def test_basic_type_literal_from_a_hand_built_row(vectors: Path) -> None:
    basic = record("TestBasicType")
    assert encode([hand_built_row(basic, Op.INSERT, 1, after=BASIC_TYPE_VALUES)]) == [literal_message(basic)]


def test_dml_literals_from_hand_built_rows(vectors: Path) -> None:
    literals = [r for r in CODEC_TEST_RECORDS if r["test"] == "TestDMLEvent"]
    inserted, updated = {"a": 1, "b": 123}, {"a": 1, "b": 456}
    rows = [
        hand_built_row(literals[0], Op.INSERT, 1, after=inserted),
        hand_built_row(literals[1], Op.UPDATE, 2, before=inserted, after=updated),
        hand_built_row(literals[2], Op.DELETE, 3, before=updated),
    ]
    assert encode(rows, max_batch_size=1) == [literal_message(r) for r in literals]


def test_only_output_updated_columns_literal_from_a_hand_built_row(vectors: Path) -> None:
    literal = record("TestOnlyOutputUpdatedEvent")
    old = {"a": 1, "b": 123, "c": Decimal("123.12"), "d": '{"key1": "value1"}', "e": "Alice",
           "f": bytes.fromhex("0102030405060708090A"), "g": bytes.fromhex("4944330300000000")}  # fmt: skip
    update = hand_built_row(literal, Op.UPDATE, 1, before=old, after=old | {"b": 456, "c": Decimal("456.45")})
    (written,) = encode([update], only_output_updated_columns=True)
    assert written.value == literal_message(literal).value  # the test asserts the value only


def test_handle_key_only_and_column_selector_literals(vectors: Path) -> None:
    key_only = RowChange(Op.INSERT, "test", "t", None, {"a": 1}, {"a": MySQLType("tinyint")}, ("a",), 1)
    reference = LargeMessageRef(LargeMessageKind.HANDLE_KEY_ONLY, key_only)
    assert encode([reference]) == [literal_message(record("TestHandleOnlyEvent"))]
    # With column b dropped by a column selector the row is just column a, without "ohk".
    assert encode([key_only]) == [literal_message(record("TestEncodeWithColumnSelector"))]


def test_ddl_and_resolved_literals(vectors: Path) -> None:
    ddl = record("TestDDLEvent")
    assert encode([Ddl(DdlKind.CREATE_TABLE, "test", "t", ddl["ddl"][0], commit_ts=1)]) == [literal_message(ddl)]
    (mark,) = encode([Watermark(12345678)])
    assert mark.key == literal_message(record("TestResolvedTsEvent")).key
    assert mark.value == bytes(8)  # one frame of length 0


def test_ticdc_basic_type_literal_decodes_to_the_inserted_values(vectors: Path) -> None:
    basic = record("TestBasicType")
    (row,) = decode(literal_message(basic))
    columns = ddl_columns(basic["ddl"][0])
    expected = {name: BASIC_TYPE_VALUES.get(name) for name in columns}
    expected["ak"], expected["am"] = 1, 2  # enum 'a' and set 'b' travel as index and bitmask
    assert row.after == expected
    assert row.key_columns == ("a",)
    # Per column: the base type and UnsignedFlag survive; lengths, precision and members do not.
    assert row.types == {name: carried_type(t) for name, (t, _) in columns.items()}
    assert row.meta["flags"]["y"] == row.meta["flags"]["ae"] == 193


# --- Go's strconv.Quote -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "quoted"),
    [
        # Go's documentation example: strconv.Quote(`"Fran & Freddie's Diner	☺"`).
        ('"Fran & Freddie\'s Diner\t☺"'.encode(), '\\"Fran & Freddie\'s Diner\\t☺\\"'),
        # The vectors: ticdc codec_test's varbinary, and row.json's escaped PNG header.
        (bytes.fromhex("0102030405060708090A"), "\\x01\\x02\\x03\\x04\\x05\\x06\\a\\b\\t\\n"),
        (bytes.fromhex("89504E470D0A1A0A"), "\\x89PNG\\r\\n\\x1a\\n"),
        (b"\x00\x0b\x0c\x1f\x7f\\", "\\x00\\v\\f\\x1f\\x7f\\\\"),
        ("\u00a0\u2028\ufeff".encode(), "\\u00a0\\u2028\\ufeff"),  # not printable (Zs, Zl, Cf)
        ("é测😀\ufffd".encode(), "é测😀\ufffd"),  # printable runes stay, a real U+FFFD too
        ("\U000e0001\U0010ffff".encode(), "\\U000e0001\\U0010ffff"),
        (b"\xff\xfe\xe2\x82\xed\xa0\x80", "\\xff\\xfe\\xe2\\x82\\xed\\xa0\\x80"),  # invalid UTF-8: byte by byte
    ],
)
def test_go_quote_matches_go(data: bytes, quoted: str) -> None:
    assert go_quote(data) == quoted
    assert go_unquote(quoted) == data


def test_go_quote_of_every_byte_reads_back() -> None:
    for byte in range(256):
        assert go_unquote(go_quote(bytes([byte]))) == bytes([byte])
    assert go_unquote(go_quote(bytes(range(256)))) == bytes(range(256))


def test_go_unquote_reads_what_go_reads() -> None:
    assert go_unquote("\\101\\x41\\u0041\\U00000041A") == b"AAAAA"  # octal, hex, both unicode forms
    assert go_unquote("\\u00e9\\xc3\\xa9") == "éé".encode()
    assert go_unquote("raw\ttab 'quote'") == b"raw\ttab 'quote'"


@pytest.mark.parametrize(
    "text", ["\\q", 'bare"quote', "raw\nnewline", "\\ud800", "\\U00110000", "\\400", "\\x4", "\\'", "trailing\\"]
)
def test_go_unquote_refuses_what_go_refuses(text: str) -> None:
    with pytest.raises(ValueError, match="not a Go-quoted string"):
        go_unquote(text)


@given(st.binary(max_size=64))
@settings(max_examples=300, deadline=None)
def test_go_quote_round_trip(data: bytes) -> None:
    quoted = go_quote(data)
    assert quoted.isprintable()
    assert go_unquote(quoted) == data


GO_PIECES = st.sampled_from(
    ["a", "é", "测", "😀", '\\"', "\\\\", "\\n", "\\a", "\\x00", "\\xfF", "\\101", "\\377", "\\u00e9",
     "\\U0001F600", "\\ud800", "\\400", "\\q", "\\", '"', "\n", "\\x4"]
)  # fmt: skip


@given(st.lists(GO_PIECES, max_size=12).map("".join))
@settings(max_examples=300, deadline=None)
def test_go_unquote_fast_path_agrees_with_the_general_one(text: str) -> None:
    # go_unquote reads text whose escapes are all one byte with Python's unicode_escape codec; the
    # general path reads every escape itself. They must agree, on errors too.
    def general(quoted: str) -> bytes:
        return _GO_UNQUOTE_RE.sub(_go_unescape, quoted.encode())

    def outcome(read: Any) -> Any:
        try:
            return read(text)
        except ValueError:
            return ValueError

    assert outcome(go_unquote) == outcome(general)


@pytest.mark.parametrize(
    ("value", "single", "text"),
    [
        (to_float32(153.123), True, "153.123"),
        (153.123, False, "153.123"),
        (1e20, False, "100000000000000000000"),
        (1e21, False, "1e+21"),
        (1.5e-7, False, "1.5e-07"),
        (to_float32(1e-7), True, "1e-07"),
        (-2.5e300, False, "-2.5e+300"),
        (0.000001, False, "0.000001"),
        (-0.0, False, "-0"),
        (0.0, True, "0"),
    ],
)
def test_json_float_is_json_iterators(value: float, single: bool, text: str) -> None:
    assert json_float(value, single) == text


# --- round trips ---------------------------------------------------------------------------------------

SIGNED_FAMILIES = (Family.INTEGER, Family.DECIMAL, Family.FLOAT, Family.DOUBLE)


def carried_type(mysql_type: MySQLType) -> MySQLType:
    """What Open keeps of a column type: the base type (type code and BinaryFlag) and UnsignedFlag.
    Lengths, precision, fsp, zerofill and enum/set members are not in the message."""
    return MySQLType(mysql_type.name, unsigned=mysql_type.unsigned and mysql_type.family in SIGNED_FAMILIES)


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


EDGE_VALUES: list[tuple[str, Any]] = [
    ("bigint unsigned", 2**64 - 1),
    ("bigint", -(2**63)),
    ("varbinary(300)", bytes(range(256))),
    ("binary(4)", b"\x00\x00\x00\x00"),
    ("blob", bytes(range(256))),
    ("longtext", "null"),
    ("varchar(10)", "null"),
    ("varchar(10)", ""),
    ("char(3)", "\x00\x1f\u2028"),
    ("time(6)", -dt.timedelta(hours=838, minutes=59, seconds=59, microseconds=999999)),
    ("time(3)", -dt.timedelta(microseconds=1000)),
    ("date", ZeroTemporal("0000-00-00")),
    ("datetime", ZeroTemporal("2024-00-15 00:00:00")),
    ("timestamp", ZeroTemporal("0000-00-00 00:00:00")),
    ("bit(64)", 2**64 - 1),
    ("json", '{"a": [1, null, "null"], "b": "\\u0000"}'),
    ("decimal(65,30)", Decimal("-" + "9" * 35 + "." + "9" * 30)),
    ("decimal(10,4)", Decimal("0.0000")),
    ("year", 0),
    ("double", 5e-324),
    ("float", to_float32(3.4028234663852886e38)),
]


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


# --- large messages ------------------------------------------------------------------------------------


def test_handle_key_only_and_claim_check_references() -> None:
    value = '{"u":{"a":{"t":1,"h":true,"f":11,"v":1}}}'
    ref = decode_one('{"ts":9,"scm":"test","tbl":"t","t":1,"ohk":true}', value)
    assert isinstance(ref, LargeMessageRef) and ref.kind is LargeMessageKind.HANDLE_KEY_ONLY
    assert (ref.row.after, ref.row.key_columns, ref.row.commit_ts) == ({"a": 1}, ("a",), 9)
    # TiCDC writes a claim-check reference with "ohk" twice (true, then false); the last one counts.
    key = '{"ts":9,"scm":"test","tbl":"t","t":1,"ohk":true,"ohk":false,"ccl":"s3:/bucket/5f1c.json"}'
    ref = decode_one(key, value)
    assert isinstance(ref, LargeMessageRef) and ref.kind is LargeMessageKind.CLAIM_CHECK
    assert ref.location == "s3:/bucket/5f1c.json"
    (msg,) = encode([ref])
    assert split_batch(msg.key, msg.value)[0] == (key.encode(), value.encode())
    plain = decode_one('{"ts":9,"scm":"test","tbl":"t","t":1,"ohk":false,"ptn":77}', value)
    assert isinstance(plain, RowChange) and plain.meta["ptn"] == 77


def test_a_decoder_reads_each_row_as_a_fresh_one_would() -> None:
    """The decoder plans per row shape (column names, type codes, flags); rows of the same columns whose
    types, flags or legacy form differ (an ALTER, a message from an older producer) must not be read
    with another row's plan."""
    values = [
        b'{"u":{"id":{"t":3,"f":11,"v":1},"v":{"t":3,"f":65,"v":-5}}}',
        b'{"u":{"id":{"t":3,"f":11,"v":1},"v":{"t":8,"f":193,"v":18446744073709551615}}}',  # bigint unsigned now
        b'{"u":{"id":{"t":3,"h":true,"v":1},"v":{"t":15,"v":"x"}}}',  # no "f": "h" marks the key
        b'{"u":{"id":{"t":3,"f":0,"v":1},"v":{"t":15,"f":0,"v":"x"}}}',  # "f" without key bits: no key
        b'{"u":{"id":{"t":3,"f":11,"v":1},"v":{"t":15,"f":65,"v":"\\\\x00"}}}',  # varbinary now
        b'{"u":{"id":{"t":3,"f":11,"v":1},"v":{"t":true,"f":65,"v":1}}}',  # refused, however often seen
    ]
    shared = CODEC.decoder()
    for _ in range(2):
        for value in values:
            results = []
            for decoder in (shared, CODEC.decoder()):
                try:
                    results.append(decoder.decode(message([GOOD_KEY], [value])))
                except DecodeError as error:
                    results.append(error.reason)
            assert results[0] == results[1]
    key_columns = [r.key_columns for v in values[:5] for r in decode(message([GOOD_KEY], [v]))]
    assert key_columns == [("id",), ("id",), ("id",), (), ("id",)]


# Per type (code, flags): JSON values a warmed decoder reads on its compiled fast path and a fresh one
# column by column; both must give the same value of the same type, or refuse with the same reason.
# fmt: off
FAST_PATH_VALUES: list[tuple[str, int, int, list[str]]] = [
    ("int", 3, 0, ["0", "-2147483648", "2147483647", "2147483648", "true", "1.0", '"5"', "null"]),
    ("bigint unsigned", 8, 128, ["18446744073709551615", "18446744073709551616", "-1", "false"]),
    ("bit", 16, 129, ["0", "18446744073709551615", "-1", "true"]),
    ("year", 13, 129, ["0", "2155", "2156", "true"]),
    ("float", 4, 0, ["1.5", "-0.0", "0.0", "3", "1e39", "true", '"1.5"']),
    ("double", 5, 0, ["1.5", "-0.0", "3", "1e308", "true", '"1.5"']),
    ("decimal", 246, 0, [
        '"0"', '"-0"', '"1.50"', '"00.5"', '"-00012.3400"', '"0.0000001"', '"12345678901234567890.123456789"',
        '"1e5"', '"1E5"', '"1E+5"', '"1E-7"', '"1.5e-7"', '".5"', '"5."', '"+5"', '" 5"', '"5 "', '"1_0"',
        '"NaN"', '"Infinity"', '"-Infinity"', '"sNaN"', '"\u0661\u0662"', '"\uff11"', '""', '"-"', "5", "1.5", "true",
    ]),
    ("date", 10, 0, ['"2024-02-29"', '"2023-02-29"', '"0000-00-00"', '"2024-00-15"', '"20240101"', '"2024-W01-1"']),
    ("datetime", 12, 0, [
        '"2024-01-02 03:04:05"', '"2024-01-02 03:04:05.123456"', '"2024-01-02T03:04:05"', '"0000-00-00 00:00:00"',
        '"2024-01-02 24:00:00"', '"2024-01-02 03:04:05+05:00"', '"2024-01-02 03:04:05.1234567"',
    ]),
    ("timestamp", 7, 0, ['"2024-01-02 03:04:05.5"', '"0000-00-00 00:00:00"', '"2024-02-30 00:00:00"', '"x"']),
    ("time", 11, 0, [
        '"00:00:00"', '"01:02:03.456"', '"23:59:59.999999"', '"24:00:00"', '"838:59:59"', '"-01:02:03"',
        '"00:75:00"', '"01:02:03."', '"01:02:03.1234567"', '"01:02:03.1+01"', '"01:02:03Z"', '"01:02"',
        '"010203"', '"01:02:03,5"', '"\u0661\u0662:00:00"', '"1:02:03.45"', '"01:02:0x"', "5",
        '"-00:00:00"', '"-00:00:00.000000"', '"-0:00:00.5"', '"005:07:09.25"', '"-838:59:59.000001"', '"999:59:59"',
        '"1000:00:00"',
    ]),
    ("varbinary", 15, 65, [
        '"plain"', '"\\\\x00\\\\xff"', '"\\\\xF7\\\\xaa-Q"', '"\\\\x4"', '"\\\\x4g"', '"\\\\\\\\x41"', '"a\\\\tb"',
        '"\\\\u00e9"', '"\\\\101"', '"\\\\q"', '"x\\\\"', '"\\"x"', '"a\\nb"', '"\u00e9\\\\xe9"', "7",
    ]),
    ("blob", 252, 1, ['"aGk="', '"aGk"', '"/w=="', '"\u00e9"', '""', "7"]),
    ("text", 252, 0, ['"aGk="', '"/w=="', '"aGk"', "7"]),
    ("varchar", 15, 0, ['"x"', '""', "7", "true"]),
]
# fmt: on


@pytest.mark.parametrize("tz", ["UTC", "Asia/Shanghai"])
@pytest.mark.parametrize(
    ("code", "flags", "values"), [c[1:] for c in FAST_PATH_VALUES], ids=[c[0] for c in FAST_PATH_VALUES]
)
def test_fast_path_reads_every_value_as_the_careful_path(code: int, flags: int, values: list[str], tz: str) -> None:
    """A decoder compiles each row shape into straight-line code after its first row, and an update's
    "p" takes the values of columns whose text is the same as in "u" from "u"; every row must still
    decode exactly as a fresh decoder reads it, column by column."""

    def column(raw: str) -> str:
        return f'"id":{{"t":3,"f":11,"v":1}},"c":{{"t":{code},"f":{flags},"v":{raw}}}'

    def outcome(decoder: Any, value: str) -> Any:
        try:
            (row,) = decoder.decode(message([GOOD_KEY], [value.encode()]))
        except DecodeError as error:
            return error.reason
        return [(name, type(v), repr(v)) for image in (row.before, row.after) for name, v in (image or {}).items()]

    warmed = CODEC.decoder(tz=tz)
    warmed.decode(message([GOOD_KEY], [f'{{"u":{{{column("null")}}}}}'.encode()]))
    for raw in values:
        for other in ("null", values[0], raw):
            for value in (
                f'{{"u":{{{column(raw)}}}}}',
                f'{{"d":{{{column(raw)}}}}}',
                f'{{"u":{{{column(other)}}},"p":{{{column(raw)}}}}}',
                f'{{"u":{{{column(raw)}}},"p":{{{column(other)}}}}}',
            ):
                assert outcome(warmed, value) == outcome(CODEC.decoder(tz=tz), value), value


def test_decimal_exponents_are_refused_whatever_the_decimal_context() -> None:
    # Decimal writes its exponent as "e" under capitals=0: that text must not pass for canonical.
    decoder = CODEC.decoder()
    decoder.decode(message([GOOD_KEY], [row_value('{"t":246,"f":0,"v":"1"}')]))
    with decimal.localcontext(capitals=0), pytest.raises(DecodeError, match="expected a decimal string"):
        decoder.decode(message([GOOD_KEY], [row_value('{"t":246,"f":0,"v":"1e+5"}')]))


def test_legacy_rows_of_the_same_types_keep_their_own_handle_keys() -> None:
    # Without "f", only "h" tells the key: rows with the same names and type codes differ in it.
    values = [b'{"u":{"id":{"t":3,"h":true,"v":1}}}', b'{"u":{"id":{"t":3,"v":1}}}']
    decoder = CODEC.decoder()
    keys = [decoder.decode(message([GOOD_KEY], [value]))[0].key_columns for value in values * 2]
    assert keys == [("id",), (), ("id",), ()]


def test_an_update_shares_only_values_of_the_same_text() -> None:
    value = (
        b'{"u":{"id":{"t":3,"f":11,"v":1},"d":{"t":246,"f":0,"v":"1.50"},"b":{"t":15,"f":65,"v":"\\\\x01"}},'
        b'"p":{"id":{"t":3,"f":11,"v":1},"d":{"t":246,"f":0,"v":"1.5"},"b":{"t":15,"f":65,"v":"\\\\x01"}}}'
    )
    decoder = CODEC.decoder()
    for _ in range(3):  # the first row learns the shape, the next ones take the fast path
        (row,) = decoder.decode(message([GOOD_KEY], [value]))
        assert row.op is Op.UPDATE
        assert str(row.after["d"]) == "1.50" and str(row.before["d"]) == "1.5"
        assert row.after["b"] == row.before["b"] == b"\x01"


# --- bad input ------------------------------------------------------------------------------------------

GOOD_KEY = b'{"ts":1,"scm":"db","tbl":"t","t":1}'
GOOD_VALUE = b'{"u":{"id":{"t":3,"h":true,"f":11,"v":1}}}'


def row_value(column: str) -> bytes:
    return b'{"u":{"id":{"t":3,"h":true,"f":11,"v":1},"c":' + column.encode() + b"}}"


BAD_EVENTS: list[tuple[str, bytes, bytes, str]] = [
    ("key not JSON", b"{ts:1}", GOOD_VALUE, "key is not JSON"),
    ("key an array", b"[1]", GOOD_VALUE, "key must be a JSON object, got [1]"),
    ("key without ts", b'{"t":1,"scm":"db","tbl":"t"}', GOOD_VALUE, 'key has no "ts"'),
    ("key without t", b'{"ts":1}', b"", 'key has no "t"'),
    ("unknown event kind", b'{"ts":1,"t":4}', b"", '"t" must be 1 (row), 2 (DDL) or 3 (resolved), got 4'),
    ("kind true", b'{"ts":1,"t":true}', b"", 'key "t" must be an integer, got True'),
    ("ts a string", b'{"ts":"1","t":3}', b"", 'key "ts" must be an integer'),
    ("ts negative", b'{"ts":-1,"t":3}', b"", 'key "ts" must be a uint64, got -1'),
    ("ts past uint64", b'{"ts":18446744073709551616,"t":3}', b"", 'key "ts" must be an integer'),
    ("row without table", b'{"ts":1,"scm":"db","t":1}', GOOD_VALUE, 'needs "tbl"'),
    ("table a number", b'{"ts":1,"scm":"db","tbl":7,"t":1}', GOOD_VALUE, 'key "tbl" must be a string, got 7'),
    ("ptn a string", b'{"ts":1,"scm":"db","tbl":"t","t":1,"ptn":"6"}', GOOD_VALUE, 'key "ptn" must be an integer'),
    ("ohk a string", b'{"ts":1,"scm":"db","tbl":"t","t":1,"ohk":"yes"}', GOOD_VALUE, '"ohk" must be true or false'),
    ("resolved with a value", b'{"ts":1,"t":3}', b"{}", "a resolved event has no value, got 2 bytes"),
    ("value not JSON", GOOD_KEY, b'{"u":', "value is not JSON"),
    ("value a string", GOOD_KEY, b'"u"', "value must be a JSON object"),
    ("row without image", GOOD_KEY, b'{"q":"x"}', 'needs "u" (insert, update) or "d" (delete), got keys [\'q\']'),
    ("delete and insert", GOOD_KEY, b'{"u":{},"d":{}}', 'either "d" or "u"'),
    ("empty image", GOOD_KEY, b'{"u":{}}', 'row image "u" must be a non-empty JSON object'),
    ("image a list", GOOD_KEY, b'{"d":[1]}', 'row image "d" must be a non-empty JSON object, got [1]'),
    ("column a number", GOOD_KEY, row_value("5"), "column 'c' in \"u\": a column must be a JSON object, got 5"),
    ("no type code", GOOD_KEY, row_value('{"f":0,"v":1}'), 'no type code "t"'),
    ("no value", GOOD_KEY, row_value('{"t":3,"f":0}'), 'no value "v"'),
    ("type code a string", GOOD_KEY, row_value('{"t":"3","f":0,"v":1}'), "\"t\" must be an integer, got '3'"),
    ("flags true", GOOD_KEY, row_value('{"t":3,"f":true,"v":1}'), '"f" must be an integer, got True'),
    ("negative flags", GOOD_KEY, row_value('{"t":3,"f":-1,"v":1}'), "flags must be a uint64, got -1"),
    ("unknown type code", GOOD_KEY, row_value('{"t":99,"f":0,"v":1}'), "unknown column type code 99"),
    ("tinyint out of range", GOOD_KEY, row_value('{"t":1,"f":0,"v":300}'), "in [-128, 127], got 300"),
    (
        "unsigned negative",
        GOOD_KEY,
        row_value('{"t":8,"f":128,"v":-1}'),
        "expected bigint unsigned, an integer in [0, 18446744073709551615]",
    ),
    ("int as a string", GOOD_KEY, row_value('{"t":3,"f":0,"v":"5"}'), "expected int, an integer"),
    ("int as a float", GOOD_KEY, row_value('{"t":3,"f":0,"v":1.0}'), "got 1.0"),
    ("int as true", GOOD_KEY, row_value('{"t":3,"f":0,"v":true}'), "got True"),
    ("float as a string", GOOD_KEY, row_value('{"t":4,"f":0,"v":"1.5"}'), "expected a number"),
    ("float past float32", GOOD_KEY, row_value('{"t":4,"f":0,"v":1e39}'), "outside the float32 range"),
    ("bad Go escape", GOOD_KEY, row_value('{"t":15,"f":1,"v":"\\\\q"}'), "not a Go-quoted string"),
    ("blob not base64", GOOD_KEY, row_value('{"t":252,"f":1,"v":"abc"}'), "not standard padded base64"),
    ("blob not ASCII", GOOD_KEY, row_value('{"t":252,"f":1,"v":"é"}'), "not standard padded base64"),
    ("text not UTF-8", GOOD_KEY, row_value('{"t":252,"f":0,"v":"/w=="}'), "must be UTF-8"),
    ("bad date", GOOD_KEY, row_value('{"t":10,"f":0,"v":"2024-13-01"}'), "not a date"),
    ("datetime with offset", GOOD_KEY, row_value('{"t":12,"f":0,"v":"2024-01-01 00:00:00.1+05"}'), "not a datetime"),
    ("week date", GOOD_KEY, row_value('{"t":10,"f":0,"v":"2024-W01-1"}'), "not a date"),
    ("bad time", GOOD_KEY, row_value('{"t":11,"f":0,"v":"25h"}'), "not a time"),
    ("decimal exponent", GOOD_KEY, row_value('{"t":246,"f":0,"v":"1e5"}'), "expected a decimal string"),
    ("decimal a number", GOOD_KEY, row_value('{"t":246,"f":0,"v":1.5}'), "expected a decimal string, got 1.5"),
    ("bit negative", GOOD_KEY, row_value('{"t":16,"f":0,"v":-1}'), "expected a BIT value"),
    ("enum a name", GOOD_KEY, row_value('{"t":247,"f":0,"v":"a"}'), "expected an ENUM index"),
    ("geometry value", GOOD_KEY, row_value('{"t":255,"f":0,"v":"POINT(1 1)"}'), "no values but NULL"),
    ("NULL type value", GOOD_KEY, row_value('{"t":6,"f":0,"v":1}'), "no values but NULL"),
    ("text a number", GOOD_KEY, row_value('{"t":15,"f":0,"v":5}'), "expected a string, got 5"),
    (
        "old column not new",
        GOOD_KEY,
        b'{"u":{"id":{"t":3,"f":11,"v":1}},"p":{"x":{"t":3,"f":0,"v":1}}}',
        'column \'x\' is in "p" but not in "u"',
    ),
    (
        "old column other type",
        GOOD_KEY,
        b'{"u":{"id":{"t":3,"f":11,"v":1}},"p":{"id":{"t":8,"f":11,"v":1}}}',
        "other type code or flags",
    ),
    ("ddl without query", b'{"ts":1,"t":2}', b'{"t":3}', 'DDL value has no "q"'),
    ("ddl type a string", b'{"ts":1,"t":2}', b'{"q":"x","t":"3"}', 'DDL value "t" must be an integer'),
]


@pytest.mark.parametrize(("key", "value", "reason"), [case[1:] for case in BAD_EVENTS], ids=[c[0] for c in BAD_EVENTS])
def test_bad_events_name_event_and_reason(key: bytes, value: bytes, reason: str) -> None:
    # The bad event is the third of a batch: the error says so, and its origin points at it.
    msg = message([GOOD_KEY, GOOD_KEY, key], [GOOD_VALUE, GOOD_VALUE, value])
    with pytest.raises(DecodeError) as caught:
        decode(msg)
    error = caught.value
    assert error.format_name == "open"
    assert error.reason.startswith("event 2: ") and reason in error.reason, error.reason
    assert error.origin == ORIGIN.at(2)
    assert str(error).endswith("at cdc[3]@42 event 2")


VERSION = struct.pack(">Q", 1)
BAD_FRAMES: list[tuple[str, bytes | None, bytes | None, str]] = [
    ("no key", None, None, "the key must start with the 8-byte protocol version, got 0 bytes"),
    ("short key", b"\x00\x01", b"", "the key must start with the 8-byte protocol version, got 2 bytes"),
    ("version 2", struct.pack(">Q", 2), b"", "protocol version must be 1, got 2"),
    ("version 0", bytes(8) + frame(GOOD_KEY), frame(GOOD_VALUE), "protocol version must be 1, got 0"),
    ("key length cut", VERSION + b"\x00\x00\x00", b"", "key frame 0: length prefix at byte 8 cut short (3 of 8 bytes)"),
    (
        "key past end",
        VERSION + struct.pack(">Q", 100) + GOOD_KEY,
        frame(GOOD_VALUE),
        "key frame 0: length 100 at byte 8",
    ),
    ("huge length", VERSION + b"\xff" * 8, b"", "key frame 0: length 18446744073709551615 at byte 8 runs past the end"),
    (
        "value past end",
        VERSION + frame(GOOD_KEY) * 2,
        frame(GOOD_VALUE) + struct.pack(">Q", 50) + b"{}",
        "value frame 1: length 50 at byte",
    ),
    ("more keys", VERSION + frame(GOOD_KEY) * 2, frame(GOOD_VALUE), "the key holds 2 events but the value 1"),
    ("more values", VERSION + frame(GOOD_KEY), frame(GOOD_VALUE) * 3, "the key holds 1 events but the value 3"),
    ("value without key", VERSION, frame(b""), "the key holds 0 events but the value 1"),
]


@pytest.mark.parametrize(("key", "value", "reason"), [c[1:] for c in BAD_FRAMES], ids=[c[0] for c in BAD_FRAMES])
def test_bad_framing_is_refused(key: bytes | None, value: bytes | None, reason: str) -> None:
    with pytest.raises(DecodeError) as caught:
        decode(RawMessage(key, value, ORIGIN))
    assert reason in caught.value.reason, caught.value.reason
    assert caught.value.origin == ORIGIN
    with pytest.raises(ValueError, match=re.escape(reason)):
        split_batch(key, value)


def test_wrong_compression_is_a_decode_error() -> None:
    with pytest.raises(DecodeError, match="event 0: value is not snappy-compressed"):
        decode(message([GOOD_KEY], [GOOD_VALUE]), large_message_handle_compression="snappy")
    with pytest.raises(DecodeError, match="event 0: value is not lz4-compressed"):
        decode(message([GOOD_KEY], [GOOD_VALUE]), large_message_handle_compression="lz4")


# --- fuzz -----------------------------------------------------------------------------------------------


def fuzz_seeds() -> list[RawMessage]:
    """Realistic messages: a batch of rows over the edge-value types (insert, update, delete), a DDL, a
    resolved event, TiCDC's own 60-column row and the docs' rows."""
    types = {"id": MySQLType("bigint", unsigned=True)} | {
        f"c{i}": MySQLType.parse(text) for i, (text, _) in enumerate(EDGE_VALUES)
    }
    full = {"id": 2**64 - 1} | {f"c{i}": value for i, (_, value) in enumerate(EDGE_VALUES)}
    sparse = {name: value if i % 3 else None for i, (name, value) in enumerate(full.items())}
    batch = [
        RowChange(Op.INSERT, "shop", "orders", None, full, types, ("id",), 101),
        RowChange(Op.UPDATE, "shop", "orders", full, sparse, types, ("id",), 102),
        RowChange(Op.DELETE, "shop", "orders", sparse, None, types, ("id",), 103),
    ]
    ddl = Ddl(DdlKind.ALTER_TABLE, "shop", "orders", "ALTER TABLE orders ADD COLUMN note text", 104)
    docs = [event for event in docs_stream().values() if isinstance(event, RowChange)]
    literals = [literal_message(r) for r in CODEC_TEST_RECORDS if r["test"] in ("TestBasicType", "TestDMLEvent")]
    return [*encode([*batch, ddl, Watermark(105)]), *encode(docs), *literals]


def mutants(seeds: list[RawMessage], count: int, rng: random.Random) -> Iterator[RawMessage]:
    """Half mutate the message bytes as Kafka delivers them (framing included); half mutate one event's
    key or value JSON and frame it again, so that mutations get past the framing to the JSON."""
    for number in range(count):
        seed = rng.choice(seeds)
        key, value = seed.key or b"", seed.value or b""
        if number % 2:
            for _ in range(rng.randrange(1, 4)):
                part = rng.randrange(3)
                key = mutate(key, rng) if part != 1 else key
                value = mutate(value, rng) if part != 0 else value
            yield RawMessage(key, value, ORIGIN)
            continue
        frames = [list(pair) for pair in split_batch(key, value)]
        event = rng.choice(frames)
        for _ in range(rng.randrange(1, 4)):
            side = rng.randrange(2)
            event[side] = mutate(event[side], rng)
        yield message([k for k, _ in frames], [v for _, v in frames])


def test_fuzzed_messages_only_raise_decode_errors(vectors: Path) -> None:
    decoder = CODEC.decoder()
    outcomes = {"decoded": 0, "refused": 0}
    for mutant in mutants(fuzz_seeds(), 20_000, random.Random(2024)):
        try:
            decoder.decode(mutant)
            outcomes["decoded"] += 1
        except DecodeError as error:
            assert error.format_name == "open" and error.origin is not None
            outcomes["refused"] += 1
    assert outcomes["decoded"] > 200 and outcomes["refused"] > 10_000  # both paths were exercised
