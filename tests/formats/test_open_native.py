"""The compiled Open Protocol row reader (native/src/open.rs, planned by cdclake.spark.native_rows, typing
columns by their codes and flags as the decoder does) makes the very change records that the decoder
and ChangeWriter make, for every message it reads, and leaves every other message to them: each test
reads the same messages both ways (tests/formats/both_ways.py) and compares the records."""

from __future__ import annotations

import random
import struct
from collections.abc import Iterable
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from cdclake.formats import get_codec
from cdclake.formats.open_protocol.wire import split_batch
from cdclake.model import Origin, RawMessage
from cdclake.spark.native_rows import native_readers
from cdclake.workload import Workload, WorkloadSpec, messages
from tests.formats.both_ways import BothWays
from tests.formats.open_protocol.test_decoding import BAD_EVENTS, FAST_PATH_VALUES, GOOD_KEY
from tests.fuzzing import MUTATIONS, mutate

CODEC = get_codec("open")
ID = '"id":{"t":3,"h":true,"f":11,"v":1}'


def _frame(data: bytes) -> bytes:
    return struct.pack(">Q", len(data)) + data


def _batch(events: list[tuple[bytes, bytes]], version: int = 1) -> tuple[bytes, bytes]:
    key = struct.pack(">Q", version) + b"".join(_frame(key) for key, _ in events)
    return key, b"".join(_frame(value) for _, value in events)


def _read_all(way: BothWays, batches: Iterable[tuple[bytes, bytes] | RawMessage]) -> int:
    for offset, batch in enumerate(batches):
        origin = Origin(topic="t", partition=3, offset=offset)
        message = batch if isinstance(batch, RawMessage) else RawMessage(*batch, origin, 1_700_000_000_000 + offset)
        way.read(message)
    return way.check()


def _row(value: str, key: bytes = GOOD_KEY) -> tuple[bytes, bytes]:
    return _batch([(key, value.encode())])


def test_every_value_of_every_type() -> None:
    """The decoder's own list of values each type code must read or refuse
    (tests/formats/open_protocol/test_decoding.py), inserted, deleted and updated from and to each other
    and NULL."""
    for tz in ("UTC", "Asia/Shanghai"):
        for _, code, flags, values in FAST_PATH_VALUES:

            def column(raw: str, code: int = code, flags: int = flags) -> str:
                return f'{ID},"c":{{"t":{code},"f":{flags},"v":{raw}}}'

            batches = []
            for raw in values:
                for other in ("null", values[0], raw):
                    batches += [
                        _row(f'{{"u":{{{column(raw)}}}}}'),
                        _row(f'{{"d":{{{column(raw)}}}}}'),
                        _row(f'{{"u":{{{column(other)}}},"p":{{{column(raw)}}}}}'),
                        _row(f'{{"u":{{{column(raw)}}},"p":{{{column(other)}}}}}'),
                        _row(f'{{"u":{{{column(raw)}}},"p":{{"c":{{"t":{code},"f":{flags},"v":{other}}}}}}}'),
                    ]
            assert _read_all(BothWays("open", tz=tz), batches) > 0, (tz, code)


def test_a_workload_stream_is_read_natively_as_the_decoder_reads_it() -> None:
    """Every table and type of the upstream simulator, DDLs and resolved events between, batched."""
    workload = Workload(WorkloadSpec(seed=11, tables=10, transactions=300, rows_per_transaction=3))
    for options in ({}, {"tz": "Asia/Shanghai"}, {"only-output-updated-columns": True}, {"max-batch-size": 1}):
        stream = list(messages(workload, "open", options))
        way = BothWays("open", **{k: v for k, v in options.items() if k == "tz"})
        for message in stream:
            way.read(message)
        rows = sum(1 for m in stream if b'"t":1}' in (m.key or b""))
        assert way.check() >= 0.9 * rows, options


def test_messages_the_reader_leaves_to_the_decoder() -> None:
    """Every bad event of the decoder's tests, alone and after a good one; events the decoder reads but
    the reader does not (a DDL or resolved event, a large message, a column without flags, a field it
    does not know); and broken framing."""
    good = (GOOD_KEY, f'{{"u":{{{ID}}}}}'.encode())
    leave: list[tuple[bytes, bytes]] = []
    for _, key, value, _ in BAD_EVENTS:
        leave += [_batch([(key, value)]), _batch([good, (key, value)])]
    odd_events = [
        (b'{"ts":1,"scm":"db","tbl":"t","t":2}', b'{"q":"create table t (id int)","t":3}'),
        (b'{"ts":5,"t":3}', b""),
        (b'{"ts":1,"scm":"db","tbl":"t","t":1,"ccl":"s3://x"}', good[1]),
        (b'{"ts":1,"scm":"db","tbl":"t","t":1,"ohk":true}', good[1]),
        (b'{"ts":1,"scm":"db","tbl":"t","t":1,"ptn":null}', good[1]),
        (b'{"ts":1,"scm":"db","tbl":"t","t":1,"ptn":"5"}', good[1]),
        (b'{"ts":1,"scm":"db","tbl":"t","t":1,"more":1}', good[1]),
        (b'{"ts":1,"scm":"db","tbl":"t","t":1,"ts":2}', good[1]),
        (b'{"ts":9223372036854775808,"scm":"db","tbl":"t","t":1}', good[1]),
        (b'[1,1,"db","t"]', good[1]),
        (GOOD_KEY, b'{"u":{"id":{"t":3,"h":true,"v":1}}}'),  # no flags: only "h" tells the key
        (GOOD_KEY, b'{"u":{"id":{"t":3,"f":11,"v":1},"n":{"t":6,"f":0,"v":null}}}'),  # the NULL type code
        (GOOD_KEY, b'{"u":{"id":{"t":3,"f":11,"v":1,"x":1e999}}}'),
        (GOOD_KEY, b'{"u":{"id":{"t":3,"f":11,"v":1,"h":1}}}'),
        (GOOD_KEY, b'{"u":{"id":{"t":3,"f":11,"v":1}},"x":1}'),
        (GOOD_KEY, b'{"u":{"id":{"t":3,"f":11,"v":1}},"u":null}'),
        (GOOD_KEY, b'{"u":{"id":[3,11,1]}}'),
        (GOOD_KEY, b'[{"id":{"t":3,"f":11,"v":1}}]'),
        (GOOD_KEY, b'{"u":{"id":{"t":3,"f":11,"v":1},"id":{"t":3,"f":11,"v":2}}}'),
        (GOOD_KEY, b'{"u":{"id":{"t":3,"f":11,"v":1}},"p":{"id":{"t":3,"f":3,"v":1}}}'),  # other flags in "p"
        (GOOD_KEY, b'{"u":{"id":{"t":3,"f":11,"v":1}},"p":{"x":{"t":3,"f":0,"v":1}}}'),  # a column "u" lacks
        (GOOD_KEY, b'{"u":{"id":{"t":3,"f":11,"v":1}},"d":{"id":{"t":3,"f":11,"v":1}}}'),
        (GOOD_KEY, b'{"u":{"id":{"t":3,"f":11,"v":"\\ud800"}}}'),
        (GOOD_KEY, b'{"u":{"id":{"t":3,"f":11,"v":"\xff"}}}'),
    ]
    for event in odd_events:
        leave += [_batch([event]), _batch([good, event])]
    whole = _batch([good])
    leave += [
        _batch([good], version=2),
        (whole[0], whole[1][:-1]),
        (whole[0] + _frame(GOOD_KEY), whole[1]),
        (whole[0][:-3], whole[1]),
        _batch([]),
    ]
    way = BothWays("open", on_handle_key_only="dead-letter")
    assert _read_all(way, [*leave, RawMessage(None, whole[1], Origin("t", 3, 99))]) == 0


def test_keys_partitions_escapes_and_partial_old_images() -> None:
    """A partition's ptn and rid, a table without a key, JSON escapes in names and values, a key change,
    and an update whose "p" holds only the changed columns, in another order."""
    odd = 'q\\"\\\\\\n\\t\\u0001\u2028é😀'
    events = [
        (b'{"ts":1,"scm":"db","tbl":"t","t":1,"ptn":7,"rid":-2}', f'{{"u":{{{ID}}}}}'.encode()),
        (GOOD_KEY, f'{{"u":{{"c":{{"t":15,"f":0,"v":"{odd}"}},"d":{{"t":12,"f":64,"v":null}}}}}}'.encode()),
        (GOOD_KEY, f'{{"u":{{"n\\u00e9":{{"t":15,"f":0,"v":"{odd}"}},{ID}}}}}'.encode()),
        (GOOD_KEY, b'{"u":{"id":{"t":3,"f":11,"v":4},"c":{"t":15,"f":0,"v":"a"}},"p":{"id":{"t":3,"f":11,"v":5}}}'),
        (
            GOOD_KEY,
            b'{"u":{"id":{"t":3,"f":11,"v":4},"c":{"t":15,"f":0,"v":"a"},"b":{"t":252,"f":1,"v":"AAE="}},'
            b'"p":{"b":{"t":252,"f":1,"v":"/w=="},"c":{"t":15,"f":0,"v":"b"}}}',
        ),
        (GOOD_KEY, b'{"u":{"id":{"t":3,"f":11,"v":4}},"p":{}}'),
        (b'{"t":1,"tbl":"u","scm":"db2","ts":7}', f'{{"d":{{{ID}}}}}'.encode()),
    ]
    assert _read_all(BothWays("open"), [_batch(events), *(_batch([event]) for event in events)]) == 1 + len(events)


def test_mutants_of_a_stream_read_alike() -> None:
    """Every kind of the fuzzers' mutation of real events (tests/fuzzing.py), one event of a batch at a
    time: what the decoder refuses is an error record both ways, what it reads the same records."""
    rng = random.Random(5)
    stream = [m for m in messages(Workload(WorkloadSpec(seed=2, tables=10, transactions=60)), "open") if m.key]
    way = BothWays("open")
    for offset in range(3000):
        seed = rng.choice(stream)
        events = split_batch(seed.key, seed.value)
        at, part = rng.randrange(len(events)), rng.randrange(2)
        event = list(events[at])
        event[part] = mutate(event[part], rng, MUTATIONS[offset % len(MUTATIONS)])
        events[at] = (event[0], event[1])
        key, value = _batch(events)
        way.read(RawMessage(key, value, Origin("t", 0, offset)))
    assert way.check() > 150


_CODES = st.sampled_from(
    [(3, 0), (8, 128), (1, 11), (16, 129), (13, 129), (246, 0), (15, 0), (15, 65), (254, 1), (10, 0), (12, 0),
     (7, 0), (11, 0), (252, 0), (252, 1), (4, 0), (5, 0), (247, 0), (248, 0), (245, 0)]
)  # fmt: skip
_VALUE = st.one_of(
    st.none(),
    st.integers(min_value=-(2**65), max_value=2**65),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=6),
    st.from_regex(r"-?[0-9]{1,21}(\.[0-9]{0,7})?", fullmatch=True),
    st.from_regex(r"[0-9]{4}-[0-9]{2}-[0-9]{2}( [0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,7})?)?", fullmatch=True),
    st.from_regex(r"[A-Za-z0-9+/]{0,6}={0,2}", fullmatch=True),
    st.from_regex(r"([a-z]|\\x[0-9a-fA-F]{2}|\\[0-7]{3}|\\u[0-9a-fA-F]{4}|\\[abnq\"])*", fullmatch=True),
)


def _json(value: Any) -> str:
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # an integer past 64 bits, which TiCDC's JSON still carries
        return str(value)


@settings(max_examples=300, deadline=None)
@given(
    codes=st.lists(_CODES, min_size=1, max_size=4),
    values=st.lists(_VALUE, min_size=4, max_size=4),
    op=st.sampled_from(["u", "d", "p"]),
    tz=st.sampled_from(["UTC", "+08:00"]),
)
def test_any_values_of_any_types(codes: list[tuple[int, int]], values: list[Any], op: str, tz: str) -> None:
    def image(values: list[Any]) -> str:
        columns = (f'"c{i}":{{"t":{code},"f":{flags},"v":{_json(v)}}}' for i, ((code, flags), v) in
                   enumerate(zip(codes, values, strict=False)))
        return "{" + ",".join(columns) + "}"

    new, old = image(values), image(values[::-1])
    value = {"u": f'{{"u":{new}}}', "d": f'{{"d":{new}}}', "p": f'{{"u":{new},"p":{old}}}'}[op]
    _read_all(BothWays("open", tz=tz), [_row(value)])


def test_the_reader_takes_options_as_the_decoder_does() -> None:
    """By their upstream names, resolved or not; a compressed stream's values go to the decoder."""
    assert native_readers(CODEC, {"tz": "+08:00"}) is not None
    assert native_readers(CODEC, {"large-message-handle-compression": "lz4"}) is None
