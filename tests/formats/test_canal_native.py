"""The compiled Canal-JSON row reader (native/src/canal.rs, planned by cdclake.spark.native_rows) makes
the very change records that the decoder and ChangeWriter make, for every message it reads, and leaves
every other message to them: each test reads the same messages both ways and compares the records."""

from __future__ import annotations

import random
import struct
from collections.abc import Iterable, Mapping
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cdclake.formats import get_codec
from cdclake.model import Origin, RawMessage
from cdclake.spark.native_rows import native_readers
from cdclake.workload import Workload, WorkloadSpec, messages
from tests.formats.both_ways import BothWays
from tests.formats.test_canal_json_fast_path import VALUES, ZONES
from tests.fuzzing import MUTATIONS, mutate

CODEC = get_codec("canal-json")


def _message(body: Any, offset: int = 0) -> RawMessage:
    value = body if isinstance(body, bytes) else orjson.dumps(body)
    return RawMessage(b"k", value, Origin(topic="t", partition=3, offset=offset), 1_700_000_000_000 + offset)


def _row(op: str, mysql_type: Mapping[str, str], data: list[Any], old: Any = None, **fields: Any) -> dict[str, Any]:
    body = {"id": 0, "database": "db", "table": "t", "pkNames": ["id"], "isDdl": False, "type": op, "es": 1,
            "ts": 2, "sql": "", "sqlType": {}, "mysqlType": mysql_type, "data": data, "old": old,
            "_tidb": {"commitTs": 449000000000000000}}
    body.update(fields)
    return body


def _read_all(way: BothWays, bodies: Iterable[Any]) -> int:
    for offset, body in enumerate(bodies):
        way.read(_message(body, offset))
    return way.check()


@pytest.mark.parametrize("tz", ZONES)
@pytest.mark.parametrize(("text", "values"), VALUES, ids=[text for text, _ in VALUES])
def test_every_value_of_every_type(text: str, values: list[Any], tz: str) -> None:
    """The decoder's own list of values each type must read or refuse (tests/formats/test_canal_json_fast_path.py),
    inserted, deleted and updated from and to each other and NULL."""
    types = {"id": "int", "c": text}

    def bodies() -> Iterable[Any]:
        for raw in [*values, None]:
            yield _row("INSERT", types, [{"id": "1", "c": raw}])
            yield _row("DELETE", types, [{"id": "1", "c": raw}])
            for other in (raw, values[0], None):
                for new, old in ((other, raw), (raw, other)):
                    yield _row("UPDATE", types, [{"id": "1", "c": new}], [{"id": "1", "c": old}])
                    yield _row("UPDATE", types, [{"id": "1", "c": new}], [{"c": old}])  # only what changed

    assert _read_all(BothWays("canal-json", tz=tz), bodies()) > 0


def test_a_workload_stream_is_read_natively_as_the_decoder_reads_it() -> None:
    """Every table and type of the upstream simulator, DDLs and watermarks between (left to the decoder)."""
    workload = Workload(WorkloadSpec(seed=11, tables=10, transactions=300, rows_per_transaction=3))
    for options in ({"enable-tidb-extension": "true"},
                    {"enable-tidb-extension": "true", "content-compatible": "true"},
                    {"enable-tidb-extension": "true", "tz": "+08:00", "only-output-updated-columns": "true"}):
        stream = list(messages(workload, "canal-json", options))
        way = BothWays("canal-json", **options)
        for message in stream:
            way.read(message)
        rows = sum(1 for m in stream if b'"isDdl":false' in m.value and b'"TIDB_WATERMARK"' not in m.value)
        assert way.check() >= 0.9 * rows, options


def test_messages_the_reader_leaves_to_the_decoder() -> None:
    types = {"id": "int", "c": "varchar(10)"}
    row = [{"id": "1", "c": "x"}]
    leave = [
        _row("INSERT", types, row, isDdl=True),
        _row("INSERT", types, row, _tidb={"commitTs": 5, "onlyHandleKey": True}),
        _row("INSERT", types, row, _tidb={"commitTs": 2**63}),
        _row("INSERT", types, row, _tidb={"commitTs": 5.0}),
        _row("INSERT", types, row, _tidb=None),
        _row("INSERT", types, [{"id": "1", "c": "x", "d": "y"}]),  # a column without a type
        _row("INSERT", types, [{"id": 1, "c": "x"}]),  # typed JSON
        _row("INSERT", types, [{}]),
        _row("INSERT", types, ["x"]),
        _row("INSERT", types, []),
        _row("UPDATE", types, row, [{"id": "1"}, {"id": "2"}]),
        _row("UPDATE", types, row, "x"),
        _row("INSERT", types, row, pkNames=[1]),
        _row("INSERT", types, row, database=None),
        _row("INSERT", {"id": "int", "c": "no such type"}, row),
        _row("INSERT", {"id": "int", "c": 5}, row),
        _row("INIT", types, row),
        _row("TIDB_WATERMARK", types, row),
        orjson.dumps(_row("INSERT", types, row)) + b"\n" + orjson.dumps(_row("INSERT", types, row)),
        orjson.dumps(_row("INSERT", types, row)).replace(b'"x"', b'"\xff"'),
        # Not UTF-8, or a lone surrogate, in a field the reader skips: the decoder refuses the message.
        orjson.dumps(_row("INSERT", types, row)).replace(b'"sql":""', b'"sql":"\xf5"'),
        orjson.dumps(_row("INSERT", types, row)).replace(b'"sql":""', b'"sql":"\\ud800"'),
        b"[1]",
        b"{",
    ]
    assert _read_all(BothWays("canal-json", enable_tidb_extension=True, on_handle_key_only="dead-letter"), leave) == 0


def test_mutants_of_a_stream_read_alike() -> None:
    """Every kind of the fuzzers' mutation of real messages (tests/fuzzing.py): what the decoder refuses
    is an error record both ways, what it reads the same records."""
    rng = random.Random(5)
    options = {"enable-tidb-extension": "true"}
    stream = list(messages(Workload(WorkloadSpec(seed=2, tables=10, transactions=60)), "canal-json", options))
    way = BothWays("canal-json", **options)
    for offset in range(3000):
        seed = rng.choice(stream)
        way.read(_message(mutate(seed.value, rng, MUTATIONS[offset % len(MUTATIONS)]), offset))
    assert way.check() > 300  # the mutants it reads itself: those of the bytes it reads or skips alike


def test_images_keys_and_partial_rows() -> None:
    """Several rows, a table without a key, a key the image lacks, a row missing a column, JSON escapes."""
    types = {"id": "int", "c": "varchar(10)", "d": "datetime"}
    odd = "q\"\\\n\t\x01\x7f\u2028é😀"
    bodies = [
        _row("INSERT", types, [{"id": "1", "c": odd, "d": "2024-01-02 03:04:05.5"}, {"id": "2", "c": None}]),
        _row("INSERT", types, [{"c": "x", "id": "3", "d": None}], pkNames=None),
        _row("INSERT", types, [{"c": "x", "id": "3"}], pkNames=["c", "nope"]),
        _row("UPDATE", types, [{"id": "4", "c": "a"}], [{"id": "5"}]),  # the key changed
        _row("UPDATE", types, [{"id": "4", "c": "a"}], [{"d": "2024-01-01 00:00:00", "x": None}]),
        _row("UPDATE", types, [{"id": "4", "c": "a"}], [{"x": "1"}]),  # a column without a type
        _row("UPDATE", types, [{"id": "4", "c": "a"}], [{"c": "a", "id": "4"}]),
        _row("UPDATE", types, [{"id": "4", "c": "a"}, {"id": "6", "c": "b"}], [None]),
        _row("DELETE", types, [{"id": "7", "c": "b", "d": "1999-12-31 23:59:59"}], old=[{"id": "8"}]),
        {**_row("INSERT", types, [{"id": "9", "c": "b"}]), "mysqlType": {"c": "varchar(10)", "id": "int"}},
    ]
    # All but the one with the unknown column "x".
    assert _read_all(BothWays("canal-json", enable_tidb_extension=True), bodies) == len(bodies) - 1


def _float_texts(rng: random.Random) -> Iterable[str]:
    """Doubles of random bits in each spelling a producer may use, and random digits."""
    for _ in range(1000):
        value = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]
        yield from (repr(value), f"{value:.17g}", f"{value:f}", f"{value:.3e}")
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 30)))
        yield f"{digits[:rng.randint(1, len(digits))]}.{digits}e{rng.randint(-330, 330)}"
    yield from ("0", "-0", "0.0", "-0.0", "1e39", "3.4028235e38", "3.4028236e38", "1.4e-45", "1e-46", "5e-324",
                "1.7976931348623157e308", "1.8e308", "123456789012345678901234567890", "0.1", "100", "1E5", "1e+5",
                "879.56109619140625")


def test_floats_and_doubles_are_the_decoders_texts() -> None:
    """Floats and doubles are the decoder's texts, ties between two shortest texts too (a float32's
    879.56109619140625 is 879.5610961914062, as Python's repr breaks the tie, not ...063 as Rust's Display)."""
    texts = list(_float_texts(random.Random(7)))
    types = {"id": "int", "d": "double", "f": "float"}
    bodies = [_row("INSERT", types, [{"id": str(i), "d": text, "f": text}]) for i, text in enumerate(texts)]
    # It leaves those the decoder refuses: a double beyond float32's range (about half of random bits) as a FLOAT.
    assert _read_all(BothWays("canal-json"), bodies) > len(bodies) // 3


_TYPES = st.sampled_from(["int", "bigint unsigned", "tinyint", "bit(3)", "year", "decimal(10,2)", "varchar(8)",
                          "date", "datetime", "timestamp", "binary(2)", "enum", "float", "time", "json"])
_TEXT = st.one_of(st.text(max_size=6), st.from_regex(r"-?[0-9]{1,21}(\.[0-9]{0,7})?", fullmatch=True),
                  st.from_regex(r"[0-9]{4}-[0-9]{2}-[0-9]{2}( [0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,7})?)?",
                                fullmatch=True))
_VALUE = st.one_of(st.none(), _TEXT)


@settings(max_examples=300, deadline=None)
@given(types=st.lists(_TYPES, min_size=1, max_size=4), rows=st.lists(st.lists(_VALUE, min_size=4, max_size=4),
                                                                     min_size=1, max_size=3),
       op=st.sampled_from(["INSERT", "UPDATE", "DELETE"]), tz=st.sampled_from(["UTC", "+08:00"]))
def test_any_texts_of_any_types(types: list[str], rows: list[list[Any]], op: str, tz: str) -> None:
    mysql_type = {f"c{i}": text for i, text in enumerate(types)}
    data = [{name: values[i] for i, name in enumerate(mysql_type)} for values in rows]
    old = [{name: values[-1 - i] for i, name in enumerate(mysql_type)} for values in rows]
    _read_all(BothWays("canal-json", tz=tz), [_row(op, mysql_type, data, old, pkNames=["c0"])])


def test_the_reader_takes_options_as_the_decoder_does() -> None:
    """By their upstream names, resolved or not; a compressed stream's values go to the decoder."""
    assert native_readers(CODEC, {"enable-tidb-extension": True}) is not None
    assert native_readers(CODEC, {"large-message-handle-compression": "lz4"}) is None
    assert native_readers(get_codec("dataworks"), {}) is None
