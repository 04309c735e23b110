"""The contract every format keeps, whatever its wire: checked on each registered format and on a toy one
(:mod:`tests.formats.toy_jsonl`) registered here the way a real format is, one line in the registry.

A format's codec declares what it can do (:class:`cdclake.formats.base.Codec`); these tests hold each
declaration to what the codec does: a small workload, produced by the producer rules as the codec says
and decoded again, applies to exactly the oracle's tables as the format carries their values.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cdclake import formats
from cdclake.errors import DecodeError, EncodeError, OptionError
from cdclake.formats import FORMAT_NAMES, get_codec
from cdclake.model import Bootstrap, Ddl, Event, Heartbeat, Origin, RawMessage, RowChange, Watermark
from cdclake.producer import ProducerSpec
from cdclake.transcode.in_process import transcode_messages
from cdclake.transcode.spec import TranscodeSpec
from cdclake.workload import Stream, Workload, WorkloadSpec, produce
from tests.formats import toy_jsonl
from tests.test_architecture import FOUNDATION, imports_of
from tests.workload.consumer import apply, changes, decoded, order_ts, watermarks

TOY = toy_jsonl.NAME
# The registry line a real format would add to cdclake.formats._CODECS.
TOY_REGISTRY_LINE = (TOY, ("tests.formats.toy_jsonl", "CODEC"))
FORMATS = [*FORMAT_NAMES, TOY]
WORKLOAD = WorkloadSpec(seed=11, transactions=80, rename_table=True, drop_table=True)


@pytest.fixture(autouse=True, scope="module")
def _toy_registered() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(formats._CODECS, *TOY_REGISTRY_LINE)
        yield


@functools.cache
def workload() -> Workload:
    return Workload(WORKLOAD)


@functools.cache
def produced(name: str) -> tuple[Stream, dict[int, list[Event]]]:
    """The workload in ``name`` with the demo's options (the format at its fullest), and each
    partition's events decoded again."""
    stream = produce(workload(), name, get_codec(name).demo_options, duplicates=1, watermark_interval_ms=200)
    return stream, decoded(stream)


def nonempty(tables: dict[Any, Any]) -> dict[Any, Any]:
    return {name: rows for name, rows in tables.items() if rows}


def every_event(partitions: dict[int, list[Event]]) -> list[Event]:
    return [event for events in partitions.values() for event in events]


def expected_tables(*carriers: tuple[str, dict[str, Any]]) -> dict[Any, Any]:
    """The oracle's tables as the formats carry their values, one after the other (a stream transcoded
    from one into another carries what both do)."""
    oracle = workload().oracle()
    for name, options in carriers:
        oracle = oracle.carried(name, options)
    return nonempty({table: dict(state.rows) for table, state in oracle.tables.items()})


# --- the codec and its options ----------------------------------------------------------------------


def test_the_toy_is_found_as_a_real_format_is() -> None:
    assert get_codec(TOY) is toy_jsonl.CODEC


def test_the_toy_imports_only_what_a_format_may() -> None:
    source = Path(toy_jsonl.__file__).read_text(encoding="utf-8")
    ours = {m for m in imports_of("tests.formats.toy_jsonl", source) if m.split(".")[0] == "cdclake"}
    assert ours <= {*FOUNDATION, "cdclake.formats.base"}


@pytest.mark.parametrize("name", FORMATS)
def test_the_codec_is_registered_under_its_name_and_resolves_its_options(name: str) -> None:
    codec = get_codec(name)
    assert codec.name == name
    assert set(codec.resolve()) == set(codec.options)
    assert set(codec.resolve(codec.demo_options)) == set(codec.resolve(codec.sample_options)) == set(codec.options)
    with pytest.raises(OptionError, match="unknown option"):
        codec.resolve({"no-such-option": "1"})


# --- what a produced stream holds, as the codec declares it -----------------------------------------


@pytest.mark.parametrize("name", FORMATS)
def test_the_stream_applied_is_the_oracle_as_the_format_carries_it(name: str) -> None:
    stream, events = produced(name)
    assert nonempty(apply(changes(every_event(events)))) == expected_tables((name, stream.codec_options))


@pytest.mark.parametrize("name", FORMATS)
def test_a_ddl_goes_to_every_partition_or_to_partition_0_as_the_codec_says(name: str) -> None:
    stream, events = produced(name)
    holders: dict[tuple[int, str], set[int]] = {}
    for partition, partition_events in events.items():
        for event in partition_events:
            if isinstance(event, Ddl):
                holders.setdefault((order_ts(event), event.sql), set()).add(partition)
    assert holders, "the workload has DDL"
    every = set(stream.partitions) if get_codec(name).ddl_to_every_partition else {0}
    assert all(partitions == every for partitions in holders.values())


@pytest.mark.parametrize("name", FORMATS)
def test_every_partition_gets_the_watermarks_or_heartbeats_the_codec_says(name: str) -> None:
    stream, events = produced(name)
    codec = get_codec(name)
    marks = {type(e) for e in every_event(events) if isinstance(e, Watermark | Heartbeat)}
    if codec.has_watermarks(stream.codec_options):
        assert marks == {Watermark}
    elif codec.heartbeats:
        assert marks == {Heartbeat}
    else:
        assert not marks
    assert all(bool(watermarks(partition_events)) == bool(marks) for partition_events in events.values())


@pytest.mark.parametrize("name", FORMATS)
def test_bootstraps_come_exactly_where_the_codec_says(name: str) -> None:
    _, events = produced(name)
    assert any(isinstance(e, Bootstrap) for e in every_event(events)) == get_codec(name).bootstraps


@pytest.mark.parametrize("name", FORMATS)
def test_a_message_holds_several_changes_only_where_the_codec_batches(name: str) -> None:
    stream, _ = produced(name)
    largest = 0
    for messages in stream.partitions.values():
        decoder = stream.decoder()
        for message in messages:
            largest = max(largest, sum(isinstance(e, RowChange | Ddl) for e in decoder.decode(message)))
    assert (largest > 1) == get_codec(name).batches


def _fits_a_line(message: RawMessage) -> bool:
    try:
        text = (message.value or b"").decode()
    except UnicodeDecodeError:
        return False
    return message.key is None and "\n" not in text and "\r" not in text


@pytest.mark.parametrize("name", FORMATS)
def test_only_a_binary_format_has_messages_that_are_no_line_of_text(name: str) -> None:
    stream, _ = produced(name)
    assert (not all(_fits_a_line(m) for m in stream)) == get_codec(name).binary


@pytest.mark.parametrize("name", FORMATS)
def test_the_encoder_writes_heartbeats_exactly_where_the_codec_says(name: str) -> None:
    codec = get_codec(name)
    try:
        codec.encoder().encode([Heartbeat(1_700_000_000_000)])
    except EncodeError:
        writes = False
    else:
        writes = True
    assert writes == codec.heartbeats


@pytest.mark.parametrize("name", [n for n in FORMAT_NAMES if get_codec(n).sequence_meta is not None])
def test_sequence_numbers_follow_the_commits_across_partitions(name: str) -> None:
    _, events = produced(name)
    codec = get_codec(name)
    numbered = [e for e in every_event(events) if isinstance(e, RowChange | Ddl)]
    sequences = [codec.sequence_of(e) for e in numbered]
    assert None not in sequences
    by_sequence = sorted(zip(sequences, numbered, strict=True), key=lambda pair: str(pair[0]))
    ts = [order_ts(change) for _, change in by_sequence]
    assert ts == sorted(ts)


@pytest.mark.parametrize("name", FORMATS)
def test_the_decoder_raises_only_decode_errors(name: str) -> None:
    stream, _ = produced(name)
    first = next(iter(stream))
    garbage = [b"", b"{}", b"[1, 2]", b"\x00\xff\xfe", b'{"t": 1}', (first.value or b"")[:-3]]
    for value in garbage:
        with contextlib.suppress(DecodeError):
            get_codec(name).decoder(stream.codec_options).decode(RawMessage(first.key, value, Origin(file="x")))


# --- the toy through the transcoder (the pipeline's in-process path) --------------------------------


def _transcoded(source: str, target: ProducerSpec) -> dict[int, list[Event]]:
    stream, _ = produced(source)
    spec = TranscodeSpec(source, stream.codec_options, target)
    output = transcode_messages(spec, {(stream.topic, p): m for p, m in stream.partitions.items()})
    assert not output.dead_letters
    events = {}
    for partition, messages in output.partitions.items():
        decoder = target.codec.decoder(target.codec_options())
        events[partition] = [event for message in messages for event in decoder.decode(message)]
    return events


@pytest.mark.parametrize(("source", "target"), [(TOY, "simple"), ("open", TOY)])
def test_the_toy_transcodes_to_and_from_a_real_format(source: str, target: str) -> None:
    spec = ProducerSpec(target, partitions=3, topic="transcoded")
    events = _transcoded(source, spec)
    expected = expected_tables((source, produced(source)[0].codec_options), (target, spec.codec_options()))
    assert nonempty(apply(changes(every_event(events)))) == expected
