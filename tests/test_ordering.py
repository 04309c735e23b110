"""The ordering core both jobs share (cdclake.ordering): a partition's messages read in order, how far a
batch may go, which schema messages are carried on, and on-bad-message. The jobs' own tests
(test_transcode, tests/spark) prove them end to end; these pin the shared rules themselves."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from cdclake.errors import DecodeError, OptionError
from cdclake.model import (
    Bootstrap,
    Ddl,
    Event,
    Heartbeat,
    Op,
    Origin,
    PendingRow,
    RawMessage,
    RowChange,
    TableSchema,
    Watermark,
)
from cdclake.ordering.bad_messages import BadMessageError, check_bad_message_policy, stop_at_bad_message
from cdclake.ordering.reading import PartitionReading, commit_ts_problem
from cdclake.ordering.resolution import lowest_behind, newest_schema_versions, resolved_ts

# --- how far a batch may go ---------------------------------------------------------------------------


def test_the_resolved_ts_is_the_lowest_newest_watermark_of_the_partitions() -> None:
    assert resolved_ts([30, 10, 20]) == 10


def test_the_resolved_ts_is_unknown_while_a_partition_has_announced_none() -> None:
    assert resolved_ts([30, None], unknown=7) == 7
    assert resolved_ts([], unknown=7) == 7


def test_the_resolved_ts_stays_below_every_row_waiting_for_its_schema() -> None:
    assert resolved_ts([30, 40], waiting=[25, 28]) == 24
    assert resolved_ts([30, 40], waiting=[None], unknown=5) == 5  # a row whose ts is not known holds all


def test_the_bound_without_watermarks_is_the_lowest_position_of_the_partitions_behind() -> None:
    newest = {("t", 0): 50, ("t", 1): 20, ("t", 2): None, ("t", 3): 10}
    assert lowest_behind(newest, {("t", 0), ("t", 1), ("t", 2)}) == 20  # ("t", 3) was read to its end
    assert lowest_behind(newest, {("t", 2)}) is None  # behind, but nothing read there yet
    assert lowest_behind(newest, set()) is None


def test_the_newest_two_versions_of_each_table_keep_their_first_schema_message() -> None:
    primes = [("m1", "d", "a", 1), ("m2", "d", "a", 2), ("m3", "d", "a", 2), ("m4", "d", "a", 3),
              ("m5", "d", "b", None), ("m6", "d", "b", 4)]
    kept = newest_schema_versions(primes, lambda p: (p[1], p[2], p[3]))
    assert [p[0] for p in kept] == ["m2", "m4", "m5", "m6"]
    assert [p[0] for p in newest_schema_versions(primes, lambda p: (p[1], p[2], p[3]), versions_kept=1)] == [
        "m4", "m6"]


def test_a_commit_ts_beyond_64_signed_bits_cannot_be_ordered() -> None:
    assert commit_ts_problem(2**63 - 1) is None and commit_ts_problem(None) is None
    assert commit_ts_problem(2**63) == f"commit ts {2**63} is beyond a 64-bit signed integer"


# --- on-bad-message -----------------------------------------------------------------------------------


def test_on_bad_message_takes_dead_letter_or_fail() -> None:
    check_bad_message_policy("dead-letter")
    check_bad_message_policy("fail")
    with pytest.raises(OptionError, match="on-bad-message='skip': one of dead-letter, fail"):
        check_bad_message_policy("skip")


def test_fail_stops_at_the_first_bad_message_and_says_what_stopping_leaves() -> None:
    stop_at_bad_message("fail", None, "nothing applied")
    stop_at_bad_message("dead-letter", "t[0]@3: not JSON", "nothing applied")
    with pytest.raises(BadMessageError, match=r"^t\[0\]@3: not JSON \(on-bad-message = fail: nothing applied\)$"):
        stop_at_bad_message("fail", "t[0]@3: not JSON", "nothing applied")


# --- reading a partition ------------------------------------------------------------------------------

SCHEMA = TableSchema("d", "t", (), version=2)


def _origin(offset: int) -> Origin:
    return Origin("t", 0, offset)


class _ScriptedDecoder:
    """Decodes each message to the events its value names: ``bad`` fails; ``half`` is held until flush."""

    def __init__(self) -> None:
        self.held: list[Event] = []
        self.primed: list[bytes | None] = []

    def decode(self, message: RawMessage) -> list[Event]:
        origin = message.origin
        match message.value:
            case b"bad":
                raise DecodeError("scripted", "not an event", origin)
            case b"wait":
                return [PendingRow("d", "t", 2, origin, commit_ts=90)]
            case b"schema":
                self.primed.append(message.value)
                return [Bootstrap(SCHEMA, origin), _row(origin.offset or 0)]  # the waiting row, now whole
            case b"half":
                self.held.append(_row(origin.offset or 0, at=origin))
                return []
            case b"row":
                return [_row(origin.offset or 0, at=origin)]
            case b"mark":
                return [Watermark(100, origin), Heartbeat(7, origin)]
        raise AssertionError(message.value)

    def flush(self) -> list[Event]:
        held, self.held = self.held, []
        return held


def _row(offset: int, at: Origin | None = None) -> RowChange:
    # The waiting row comes back with the origin of the message that held it (offset 1 below).
    return RowChange(Op.INSERT, "d", "t", None, {"id": offset}, {}, origin=at or _origin(1))


class _ScriptedCodec:
    name = "scripted"

    def __init__(self) -> None:
        self.decoder = _ScriptedDecoder()

    def resolve(self, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
        return {}

    def make_decoder(self, resolved: Mapping[str, Any]) -> _ScriptedDecoder:
        return self.decoder


class _Recorded(PartitionReading):
    def __init__(self) -> None:
        self.scripted = _ScriptedCodec()
        super().__init__(self.scripted, {})  # type: ignore[arg-type]
        self.calls: list[tuple[str, Any]] = []

    def row(self, row: RowChange, message: RawMessage) -> None:
        self.calls.append(("row", message.origin.offset))

    def ddl(self, ddl: Ddl, message: RawMessage) -> None:
        self.calls.append(("ddl", message.origin.offset))

    def bootstrap(self, schema: TableSchema, origin: Origin | None, message: RawMessage) -> None:
        self.calls.append(("bootstrap", schema.version))

    def watermark(self, watermark: Watermark) -> None:
        self.calls.append(("watermark", watermark.ts))

    def heartbeat(self, heartbeat: Heartbeat) -> None:
        self.calls.append(("heartbeat", heartbeat.ts_ms))

    def bad(self, message: RawMessage, reason: str) -> None:
        self.calls.append(("bad", message.origin.offset))

    def held(self, event: Event, message: RawMessage | None) -> None:
        self.calls.append(("held", None if message is None else message.origin.offset))

    def waiting(self, message: RawMessage, row: PendingRow) -> None:
        self.calls.append(("waiting", message.origin.offset))


def _read(reading: _Recorded, *values: bytes) -> list[tuple[str, Any]]:
    for offset, value in enumerate(values):
        reading.read(RawMessage(None, value, _origin(offset)))
    reading.finish()
    return reading.calls


def test_a_row_waits_for_its_schema_until_the_range_brings_it() -> None:
    assert _read(_Recorded(), b"mark", b"wait", b"schema") == [
        ("watermark", 100), ("heartbeat", 7), ("bootstrap", 2), ("row", 2)]


def test_what_the_range_leaves_undone_is_handed_back_at_its_end() -> None:
    # The held half comes with its message (it gave no event of its own); the waiting row after it.
    assert _read(_Recorded(), b"wait", b"half", b"row") == [("row", 2), ("held", 1), ("waiting", 0)]


def test_a_message_that_cannot_be_decoded_is_a_bad_message_and_reading_goes_on() -> None:
    assert _read(_Recorded(), b"bad", b"row") == [("bad", 0), ("row", 1)]


def test_a_primed_message_teaches_the_decoder_and_gives_no_event() -> None:
    reading = _Recorded()
    reading.prime(RawMessage(None, b"schema", _origin(0)))
    reading.prime(RawMessage(None, b"bad", _origin(1)))  # reported when it was first read
    reading.finish()
    assert reading.calls == []
    assert reading.scripted.decoder.primed == [b"schema"]
