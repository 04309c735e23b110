"""Open Protocol: large messages, the fast path read as the careful path reads, and bad or mutated input
only ever raising a DecodeError that says what, where and in which event."""

from __future__ import annotations

import decimal
import random
import re
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cdclake.errors import DecodeError
from cdclake.formats.open_protocol.wire import split_batch
from cdclake.model import Ddl, DdlKind, LargeMessageKind, LargeMessageRef, Op, RawMessage, RowChange, Watermark
from cdclake.types import MySQLType
from tests.formats.open_protocol.helpers import (
    CODEC,
    CODEC_TEST_RECORDS,
    EDGE_VALUES,
    ORIGIN,
    decode,
    decode_one,
    docs_stream,
    encode,
    frame,
    literal_message,
    message,
)
from tests.fuzzing import mutate

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
