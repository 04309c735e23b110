"""The compiled Simple protocol row reader (native/src/simple.rs, planned by cdclake.spark.native_rows,
reading by the schemas the partition's decoder holds) makes the very change records that the decoder
and ChangeWriter make, for every message it reads, and leaves every other message to them: each test
reads the same messages both ways (tests/formats/both_ways.py) and compares the records."""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdclake.formats import get_codec
from cdclake.model import Bootstrap, ColumnSchema, IndexSchema, Origin, RawMessage, TableSchema
from cdclake.spark.native_rows import native_readers
from cdclake.types import MySQLType
from cdclake.workload import Workload, WorkloadSpec, messages
from tests.formats.both_ways import BothWays
from tests.formats.simple.test_values import FAST_PATH_INPUTS, FAST_PATH_TYPES
from tests.fuzzing import MUTATIONS, mutate

CODEC = get_codec("simple")
ZONES = ("UTC", "Asia/Shanghai")
_TIMESTAMPS = (
    {"location": "UTC", "value": "2024-01-15 08:00:00"},
    {"location": "Local", "value": "2024-01-15 08:00:00.5"},
)


def _schema(types: dict[str, str], version: int = 1, key: tuple[str, ...] = ("id",)) -> TableSchema:
    columns = tuple(ColumnSchema(name, MySQLType.parse(text), nullable=name not in key) for name, text in types.items())
    indexes = (IndexSchema("primary", key, unique=True, primary=True),) if key else ()
    return TableSchema("db", "t", columns, indexes, table_id=7, version=version)


def _bootstrap(schema: TableSchema) -> bytes:
    (message,) = CODEC.encoder().encode([Bootstrap(schema)])
    return message.value or b""


def _row(op: str, data: Any = None, old: Any = None, **fields: Any) -> dict[str, Any]:
    body = {
        "version": 1,
        "database": "db",
        "table": "t",
        "tableID": 7,
        "type": op,
        "commitTs": 449000000000000000,
        "buildTs": 1,
        "schemaVersion": 1,
        "data": data,
        "old": old,
    }
    body.update(fields)
    return body


def _read_all(way: BothWays, bodies: Iterable[Any]) -> int:
    for offset, body in enumerate(bodies):
        value = body if isinstance(body, bytes) else orjson.dumps(body)
        way.read(RawMessage(None, value, Origin(topic="t", partition=3, offset=offset), 1_700_000_000_000 + offset))
    return way.check()


def _json_values() -> list[Any]:
    values = []
    for raw in [*FAST_PATH_INPUTS, *_TIMESTAMPS]:
        try:
            if orjson.loads(orjson.dumps(raw)) == raw:
                values.append(raw)
        except orjson.JSONEncodeError:
            pass  # not in any message: orjson writes no NaN and no integer past 64 bits
    return values


@pytest.mark.parametrize("tz", ZONES)
@pytest.mark.parametrize("type_text", FAST_PATH_TYPES)
def test_every_value_of_every_type(type_text: str, tz: str) -> None:
    """The decoder's own list of values each type must read or refuse (tests/formats/simple/test_values.py),
    inserted, deleted and updated from and to each other and NULL."""
    values = _json_values()

    def bodies() -> Iterable[Any]:
        yield _bootstrap(_schema({"id": "bigint", "c": type_text}))
        for raw in values:
            yield _row("INSERT", {"id": "1", "c": raw})
            yield _row("DELETE", old={"id": "1", "c": raw})
            for other in (raw, "1", None, *_TIMESTAMPS):
                for new, old in ((other, raw), (raw, other)):
                    yield _row("UPDATE", {"id": "1", "c": new}, {"id": "1", "c": old})
                    yield _row("UPDATE", {"id": "1", "c": new}, {"c": old, "id": "1"})  # another order

    assert _read_all(BothWays("simple", tz=tz), bodies()) > 0


def test_a_workload_stream_is_read_natively_as_the_decoder_reads_it() -> None:
    """Every table and type of the upstream simulator, DDLs, bootstraps and watermarks between."""
    workload = Workload(WorkloadSpec(seed=11, tables=10, transactions=300, rows_per_transaction=3))
    for options in ({}, {"tz": "Asia/Shanghai"}):
        stream = list(messages(workload, "simple", options))
        way = BothWays("simple", **options)
        for message in stream:
            way.read(message)
        rows = sum(
            1
            for m in stream
            if any(f'"type":"{op}"'.encode() in (m.value or b"") for op in ("INSERT", "UPDATE", "DELETE"))
        )
        assert way.check() >= 0.9 * rows, options


def test_messages_the_reader_leaves_to_the_decoder() -> None:
    row = {"id": "1", "c": "x"}
    leave = [
        _row("INSERT", row, schemaVersion=2),  # a schema the decoder does not hold (yet: it holds the row)
        _bootstrap(_schema({"id": "bigint", "c": "varchar(10)"})),
        _row("INSERT", row, version=2),
        _row("INSERT", row, version=1.0),
        _row("INSERT", row, buildTs=None),
        _row("INSERT", row, buildTs="1"),
        _row("INSERT", row, commitTs=2**63),
        _row("INSERT", row, commitTs=-1),
        _row("INSERT", row, schemaVersion="1"),
        _row("INSERT", row, tableID="7"),
        _row("INSERT", row, database=None),
        _row("INSERT", row, claimCheckLocation="s3://x"),
        _row("INSERT", row, handleKeyOnly=True),
        _row("INSERT", row, handleKeyOnly=False),
        _row("INSERT", row, checksum={"version": 1, "corrupted": False, "current": 1, "previous": 0}),
        _row("INSERT", row, old=row),
        _row("DELETE", row, old=row),
        _row("UPDATE", row),
        _row("UPSERT", row),
        _row("INSERT", {"id": 1, "c": "x"}),  # a number, as pingcap/ticdc writes integers
        _row("INSERT", {"id": "1", "c": "x", "d": "y"}),  # a column the schema lacks
        _row("INSERT", {}),
        _row("INSERT", ["x"]),
        _row("INSERT", {"id": "1", "c": _TIMESTAMPS[0]}),  # a TIMESTAMP's object for a string
        orjson.dumps(_row("INSERT", row)).replace(b'"c":"x"', b'"c":"x","c":"y"'),
        orjson.dumps(_row("INSERT", row)).replace(b'"buildTs":1', b'"buildTs":1,"buildTs":2'),
        orjson.dumps(_row("INSERT", row)).replace(b'"x"', b'"\xff"'),
        # Not UTF-8, or a lone surrogate, in a field the reader skips: the decoder refuses the message.
        orjson.dumps(_row("INSERT", row, sql="")).replace(b'"sql":""', b'"sql":"\xf5"'),
        orjson.dumps(_row("INSERT", row, sql="")).replace(b'"sql":""', b'"sql":"\\ud800"'),
        b"[1]",
        b"{",
        b"",
    ]
    assert _read_all(BothWays("simple", on_handle_key_only="dead-letter"), leave) == 0


def test_timestamps_of_every_location_and_shape() -> None:
    """UTC and Local (the tz) read natively where Local is UTC; other zones, and the zero and odd texts,
    through the decoder's reader; a string or a malformed object for a TIMESTAMP refused as it refuses."""
    values = [
        *_TIMESTAMPS,
        {"location": "Asia/Shanghai", "value": "2024-01-15 08:00:00"},
        {"location": "UTC", "value": "0000-00-00 00:00:00"},
        {"location": "UTC", "value": "2024-02-30 00:00:00"},
        {"value": "2024-01-15 08:00:00", "location": "UTC"},
        {"location": "UTC", "value": "x", "more": 1},
        {"location": "UTC", "value": None},
        "2024-01-15 08:00:00",
        5,
        None,
    ]
    for tz in ZONES:
        bodies = [_bootstrap(_schema({"id": "bigint", "ts": "timestamp(3)"}))]
        bodies += [_row("INSERT", {"id": str(i), "ts": value}) for i, value in enumerate(values)]
        natively = _read_all(BothWays("simple", tz=tz), bodies)
        assert natively >= 4 if tz == "UTC" else natively >= 3, tz


def test_keys_partial_rows_and_escapes() -> None:
    """A table without a key, a key the image lacks, a row missing a column, JSON escapes, a key change."""
    types = {"id": "int", "c": "varchar(10)", "d": "datetime", "b": "varbinary(8)"}
    odd = 'q"\\\n\t\x01\x7f\u2028é😀'
    bodies = [
        _bootstrap(_schema(types)),
        _bootstrap(_schema(types, version=2, key=())),
        _row("INSERT", {"id": "1", "c": odd, "d": "2024-01-02 03:04:05.5", "b": "AAEC/w=="}),
        _row("INSERT", {"c": "x", "id": "3", "d": None}),
        _row("INSERT", {"c": "x"}),
        _row("INSERT", {"c": "x", "id": "3", "b": "AAEC/w="}, schemaVersion=2),
        _row("UPDATE", {"id": "4", "c": "a"}, {"id": "5", "c": "a"}),
        _row("UPDATE", {"id": "4", "c": "a"}, {"id": "4", "b": "AAE="}),
        _row("DELETE", old={"id": "7", "c": "b", "d": "1999-12-31 23:59:59"}, schemaVersion=2),
    ]
    assert _read_all(BothWays("simple"), bodies) == len(bodies) - 3  # the bootstraps, the binary "AAEC/w="


def test_a_schema_brought_again_is_the_one_read_by() -> None:
    """A later BOOTSTRAP of the same table version with other columns: rows after it read by it, both ways."""
    row = {"id": "1", "c": "2024-01-01"}
    bodies = [
        _bootstrap(_schema({"id": "bigint", "c": "date"})),
        _row("INSERT", row),
        _bootstrap(_schema({"id": "bigint", "c": "varchar(10)"})),
        _row("INSERT", row),
        _bootstrap(_schema({"id": "bigint", "c": "int"})),
        _row("INSERT", row),
    ]
    assert _read_all(BothWays("simple"), bodies) == 2  # the last row does not fit an int: the decoder says so


def test_mutants_of_a_stream_read_alike() -> None:
    """Every kind of the fuzzers' mutation of real messages (tests/fuzzing.py): what the decoder refuses
    is an error record both ways, what it reads the same records."""
    rng = random.Random(5)
    stream = list(messages(Workload(WorkloadSpec(seed=2, tables=10, transactions=60)), "simple"))
    way = BothWays("simple")
    for message in stream:
        way.read(message)  # the schemas
    for offset in range(3000):
        seed = rng.choice(stream).value or b""
        way.read(RawMessage(None, mutate(seed, rng, MUTATIONS[offset % len(MUTATIONS)]), Origin("t", 0, offset)))
    assert way.check() > 300


_TYPES = st.sampled_from(
    [
        "int",
        "bigint unsigned",
        "tinyint",
        "bit(3)",
        "year",
        "decimal(10,2)",
        "varchar(8)",
        "date",
        "datetime",
        "timestamp",
        "binary(2)",
        "enum('a','b')",
        "float",
        "time",
        "json",
    ]
)
_TEXT = st.one_of(
    st.text(max_size=6),
    st.from_regex(r"-?[0-9]{1,21}(\.[0-9]{0,7})?", fullmatch=True),
    st.from_regex(r"[0-9]{4}-[0-9]{2}-[0-9]{2}( [0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,7})?)?", fullmatch=True),
    st.from_regex(r"[A-Za-z0-9+/]{0,6}={0,2}", fullmatch=True),
)
_VALUE = st.one_of(
    st.none(),
    _TEXT,
    st.builds(
        lambda location, value: {"location": location, "value": value},
        st.sampled_from(["UTC", "Local", "Asia/Shanghai"]),
        _TEXT,
    ),
)


@settings(max_examples=300, deadline=None)
@given(
    types=st.lists(_TYPES, min_size=1, max_size=4),
    values=st.lists(_VALUE, min_size=4, max_size=4),
    op=st.sampled_from(["INSERT", "UPDATE", "DELETE"]),
    tz=st.sampled_from(["UTC", "+08:00"]),
)
def test_any_values_of_any_types(types: list[str], values: list[Any], op: str, tz: str) -> None:
    names = [f"c{i}" for i in range(len(types))]
    data = {name: values[i] for i, name in enumerate(names)}
    old = {name: values[-1 - i] for i, name in enumerate(names)}
    bodies = [
        _bootstrap(_schema(dict(zip(names, types, strict=True)), key=("c0",))),
        _row(op, None if op == "DELETE" else data, None if op == "INSERT" else old),
    ]
    _read_all(BothWays("simple", tz=tz), bodies)


def test_the_reader_takes_options_as_the_decoder_does() -> None:
    """By their upstream names, resolved or not; a compressed stream's values and Avro go to the decoder."""
    assert native_readers(CODEC, {"tz": "+08:00"}) is not None
    assert native_readers(CODEC, {"large-message-handle-compression": "lz4"}) is None
    assert native_readers(get_codec("simple-avro"), {}) is None
