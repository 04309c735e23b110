"""Canal-JSON: property round trips (every type, edge values, options) and fuzzing."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdclake.errors import DecodeError
from cdclake.formats.compression import compressor
from cdclake.model import Ddl, DdlKind, Op, RawMessage, RowChange, Watermark
from cdclake.types import Family, MySQLType
from cdclake.values import ZeroTemporal, enum_index, set_bits, value_from_text, value_to_text
from tests.formats.canal_json.helpers import CANAL, CASES, CODEC, ORIGIN, decode_one, encode, message_lines
from tests.fuzzing import mutations
from tests.strategies import TYPES, nullable_values_of, rows, values_of

# --- property round trips ------------------------------------------------------------------------------

OPTION_SETS = [
    {"content_compatible": False, "enable_tidb_extension": False},
    {"content_compatible": False, "enable_tidb_extension": True},
    {"content_compatible": True, "enable_tidb_extension": False},
    {"content_compatible": True, "enable_tidb_extension": True},
]
# A fixed offset: in a zone with daylight saving time the repeated hour's wall clock is ambiguous
# (docs/formats/canal-json.md, "What this format cannot carry").
ROUND_TRIP_TZ = "+08:00"


def type_as_sent(mtype: MySQLType, full: bool) -> MySQLType:
    """The type the decoder learns: all of it with content-compatible, else TiCDC's bare type."""
    return mtype if full else MySQLType(mtype.name, unsigned=mtype.unsigned, zerofill=mtype.zerofill)


def value_as_sent(mtype: MySQLType, value: Any, full: bool) -> Any:
    """Without the members in mysqlType an enum travels as its index and a set as its bitmask."""
    if value is None or full or mtype.family not in (Family.ENUM, Family.SET):
        return value
    return enum_index(mtype, value) if mtype.family is Family.ENUM else set_bits(mtype, value)


@st.composite
def row_changes(draw: st.DrawFn, types: list[MySQLType] | None = None) -> RowChange:
    types, after = draw(rows(types))
    before = {name: draw(nullable_values_of(mtype)) for name, mtype in types.items()} | {"id": after["id"]}
    op = draw(st.sampled_from(list(Op)))
    images = {Op.INSERT: (None, after), Op.UPDATE: (before, after), Op.DELETE: (before, None)}[op]
    commit_ts = draw(st.sampled_from([0, 2**64 - 1]) | st.integers(0, 2**64 - 1))
    return RowChange(op, "db", "tbl", *images, types, ("id",), commit_ts)


@pytest.mark.parametrize("options", OPTION_SETS, ids=lambda o: "-".join(k for k, v in o.items() if v) or "defaults")
@settings(max_examples=150, deadline=None)
@given(change=row_changes())
def test_row_changes_round_trip(options: dict[str, bool], change: RowChange) -> None:
    """Every type of tests/strategies.py with its edge values (bigint unsigned max, decimal(65,30), every
    byte in binary, zero dates, negative time with fractions, bit(64), JSON text, NULL and "null")
    decodes to what was encoded, as far as the options carry it: the commit ts only with the TiDB
    extension, full types (and enum/set member names) only with content-compatible."""
    full = options["content_compatible"]
    (value,) = encode([change], tz=ROUND_TRIP_TZ, **options)
    decoded = decode_one(value, tz=ROUND_TRIP_TZ)

    def image(values: Mapping[str, Any] | None) -> dict[str, Any] | None:
        if values is None:
            return None
        return {name: value_as_sent(change.types[name], item, full) for name, item in values.items()}

    assert decoded == RowChange(
        change.op,
        "db",
        "tbl",
        image(change.before),
        image(change.after),
        {name: type_as_sent(mtype, full) for name, mtype in change.types.items()},
        ("id",),
        change.commit_ts if options["enable_tidb_extension"] else None,
        origin=ORIGIN,
        meta={"id": 0, "es": (change.commit_ts or 0) >> 18, "ts": 0},
    )
    (again,) = encode([decoded], tz=ROUND_TRIP_TZ, **options)
    if full:
        assert again == value
    else:  # the bare mysqlType has no fsp: a fraction of zeros may be written shorter the second time
        assert decode_one(again, tz=ROUND_TRIP_TZ) == decoded


@pytest.mark.parametrize("mtype", TYPES, ids=str)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_every_type_round_trips(mtype: MySQLType, data: st.DataObject) -> None:
    """Each type of tests/strategies.py on its own, NULL and edge values included, under all four
    option sets (the mixed rows above draw types at random and need not meet every one)."""
    change = data.draw(row_changes(types=[mtype]))
    for options in OPTION_SETS:
        full = options["content_compatible"]
        (value,) = encode([change], tz=ROUND_TRIP_TZ, **options)
        decoded = decode_one(value, tz=ROUND_TRIP_TZ)
        for name, sent in (("before", change.before), ("after", change.after)):
            got = getattr(decoded, name)
            assert got == (
                None if sent is None else {n: value_as_sent(change.types[n], v, full) for n, v in sent.items()}
            )
        assert decoded.types == {name: type_as_sent(t, full) for name, t in change.types.items()}


EDGE_TYPES = {
    "id": MySQLType("bigint"),
    "u64": MySQLType("bigint", unsigned=True),
    "d65": MySQLType("decimal", length=65, decimals=30),
    "bytes": MySQLType("varbinary", length=256),
    "zero_date": MySQLType("date"),
    "zero_datetime": MySQLType("datetime", decimals=6),
    "negative_time": MySQLType("time", decimals=6),
    "bits": MySQLType("bit", length=64),
    "doc": MySQLType("json"),
    "sql_null": MySQLType("varchar", length=10),
    "text_null": MySQLType("varchar", length=10),
    "members": MySQLType("set", elements=("x", "y", "z")),
}
EDGE_VALUES = {
    "id": -(2**63),
    "u64": 2**64 - 1,
    "d65": Decimal("-" + "9" * 35 + "." + "9" * 30),
    "bytes": bytes(range(256)),
    "zero_date": ZeroTemporal("0000-00-00"),
    "zero_datetime": ZeroTemporal("0000-00-00 00:00:00"),
    "negative_time": -dt.timedelta(hours=838, minutes=59, seconds=58, microseconds=999999),
    "bits": 2**64 - 1,
    "doc": '{"a":[1,null,"\u003c/script\u003e"],"b":{}}',
    "sql_null": None,
    "text_null": "null",
    "members": "x,z",
}


@pytest.mark.parametrize("options", OPTION_SETS, ids=lambda o: "-".join(k for k, v in o.items() if v) or "defaults")
def test_edge_values_round_trip(options: dict[str, bool]) -> None:
    """The edge values every codec must carry, in one row, under each option set."""
    full = options["content_compatible"]
    change = RowChange(Op.INSERT, "db", "tbl", None, EDGE_VALUES, EDGE_TYPES, ("id",), 2**64 - 1)
    (value,) = encode([change], **options)
    decoded = decode_one(value)
    assert decoded.after == {name: value_as_sent(EDGE_TYPES[name], item, full) for name, item in EDGE_VALUES.items()}
    assert decoded.commit_ts == (2**64 - 1 if options["enable_tidb_extension"] else None)
    written = orjson.loads(value)
    assert written["sqlType"]["u64"] == 3 and written["data"][0]["u64"] == "18446744073709551615"
    assert written["data"][0]["sql_null"] is None and written["data"][0]["text_null"] == "null"


@settings(max_examples=60, deadline=None)
@given(data=st.data(), mtype=st.sampled_from([t for t in TYPES if t.family is not Family.BINARY]))
def test_values_agree_with_the_types_module(data: st.DataObject, mtype: MySQLType) -> None:
    """The decoder's fast converters read TiDB's text as values.value_from_text does, and the encoder
    writes what values.value_to_text writes (binary, which each format wraps its own way, aside)."""
    value = data.draw(values_of(mtype))
    text = value_to_text(mtype, value, dt.UTC)
    change = RowChange(Op.INSERT, "db", "tbl", None, {"v": value}, {"v": mtype})
    (encoded,) = encode([change], content_compatible=True)
    assert orjson.loads(encoded)["data"] == [{"v": text}]
    assert decode_one(encoded).after == {"v": value_from_text(mtype, text, dt.UTC)}


# A statement of each kind: the decoder reads QUERY's kind from the SQL, the others from the Canal type.
STATEMENT_OF_KIND = {
    DdlKind.CREATE_DATABASE: "CREATE DATABASE",
    DdlKind.DROP_DATABASE: "DROP SCHEMA IF EXISTS",
    DdlKind.CREATE_TABLE: "CREATE TABLE",
    DdlKind.DROP_TABLE: "DROP TABLE",
    DdlKind.RENAME_TABLE: "RENAME TABLE",
    DdlKind.TRUNCATE_TABLE: "TRUNCATE TABLE",
    DdlKind.ALTER_TABLE: "ALTER TABLE",
    DdlKind.CREATE_INDEX: "CREATE INDEX",
    DdlKind.DROP_INDEX: "DROP INDEX",
    DdlKind.OTHER: "SET",
}
CANAL_TYPE_OF_KIND = {
    DdlKind.CREATE_TABLE: "CREATE",
    DdlKind.DROP_TABLE: "ERASE",
    DdlKind.RENAME_TABLE: "RENAME",
    DdlKind.TRUNCATE_TABLE: "TRUNCATE",
    DdlKind.ALTER_TABLE: "ALTER",
    DdlKind.CREATE_INDEX: "CINDEX",
    DdlKind.DROP_INDEX: "DINDEX",
}


@settings(max_examples=100, deadline=None)
@given(
    kind=st.sampled_from(list(DdlKind)),
    names=st.tuples(st.text(max_size=12), st.text(max_size=12)),
    rest=st.text(max_size=40),
    ts=st.integers(0, 2**64 - 1),
)
def test_ddl_and_watermark_round_trip(kind: DdlKind, names: tuple[str, str], rest: str, ts: int) -> None:
    sql = f"{STATEMENT_OF_KIND[kind]} {rest}"
    decoded = decode_one(encode([Ddl(kind, *names, sql, commit_ts=ts)], enable_tidb_extension=True)[0])
    assert decoded == Ddl(
        kind,
        *names,
        sql,
        commit_ts=ts,
        origin=ORIGIN,
        meta={"id": 0, "es": ts >> 18, "ts": 0, "type": CANAL_TYPE_OF_KIND.get(kind, "QUERY")},
    )
    watermark = decode_one(encode([Watermark(ts)], enable_tidb_extension=True)[0])
    assert watermark == Watermark(ts, origin=ORIGIN, meta={"id": 0, "es": ts >> 18, "ts": 0})


# --- fuzzing -------------------------------------------------------------------------------------------


def fuzz_seeds() -> list[bytes]:
    seeds = [
        line
        for path in sorted(CANAL.iterdir())
        if not path.name.endswith(".expected.txt")
        for line in message_lines(path)
    ]
    for path in sorted(CASES.glob("*_canal_*.json")):
        spec = json.loads(path.read_text())
        texts = spec.get("kafka_values_utf8", [spec.get("kafka_value_utf8")])
        seeds += [text.encode() for text in texts if text]
        if "kafka_value_json_without_doc_comments" in spec:
            seeds.append(orjson.dumps(spec["kafka_value_json_without_doc_comments"]))
    seeds.append(b"\n".join(seeds[:3]))
    return seeds


def test_fuzz_only_decode_errors_escape(vectors: Path) -> None:
    """10,000 mutants of every message in the vectors: each decodes or raises DecodeError."""
    seeds = fuzz_seeds()
    assert len(seeds) > 150
    decoder = CODEC.decoder()
    failures = 0
    for mutant in mutations(seeds, 10_000, seed=20240611):
        try:
            decoder.decode(RawMessage(None, mutant, ORIGIN))
        except DecodeError as error:
            assert error.origin == ORIGIN and error.reason
            failures += 1
    assert 0 < failures < 10_000


@pytest.mark.parametrize("compression", ["snappy", "lz4"])
def test_fuzz_compressed_values(vectors: Path, compression: str) -> None:
    compress = compressor(compression)
    seeds = [compress(seed) for seed in fuzz_seeds()[::5]]
    decoder = CODEC.decoder(large_message_handle_compression=compression)
    for mutant in mutations(seeds, 1_500, seed=7):
        try:
            decoder.decode(RawMessage(None, mutant, ORIGIN))
        except DecodeError as error:
            assert error.origin == ORIGIN
