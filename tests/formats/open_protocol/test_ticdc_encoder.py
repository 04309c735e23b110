"""Open Protocol: the encoder writes TiCDC's own asserted messages (pingcap/ticdc codec_test.go) byte for
byte, from decoded events and from events built by hand; Go's string quoting is reproduced exactly."""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdclake.formats.open_protocol.text import _GO_UNQUOTE_RE, _go_unescape, go_quote, go_unquote, json_float
from cdclake.model import Ddl, DdlKind, LargeMessageKind, LargeMessageRef, Op, RowChange, Watermark
from cdclake.types import MySQLType
from cdclake.values import to_float32
from tests.formats.open_protocol.helpers import (
    CODEC_TEST_RECORDS,
    carried_type,
    decode,
    encode,
    literal_message,
    record,
)

# --- TiCDC's encoder expectations (pingcap/ticdc codec_test.go) ---------------------------------------


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
