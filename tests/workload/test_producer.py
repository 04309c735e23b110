"""Streams of every format, decoded again: they carry exactly the oracle's state, laid out as each
format's producer lays it out."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import orjson
import pytest

from cdclake.errors import OptionError
from cdclake.model import Bootstrap, Ddl, Event, Op, PendingRow, RowChange, Watermark
from cdclake.producer import ProducerError, ProducerSpec
from cdclake.workload import Stream, Workload, WorkloadSpec, key_of, produce
from tests.workload.consumer import apply, changes, decoded, watermarks

SPEC = WorkloadSpec(seed=21, transactions=300, rename_table=True, drop_table=True)
PRODUCER = {"duplicates": 2, "watermark_interval_ms": 250}

# name -> (format, producer options)
CONFIGS: dict[str, tuple[str, dict[str, Any]]] = {
    "open": ("open", {}),
    "open-updated-columns": ("open", {"only-output-updated-columns": True, "max-batch-size": 5}),
    "canal-json": ("canal-json", {"enable-tidb-extension": True}),
    "canal-json-plain": ("canal-json", {"content-compatible": True}),
    "simple": ("simple", {"tz": "+08:00"}),
    "simple-avro": ("simple-avro", {"send-bootstrap-in-msg-count": 40}),
    "dataworks": ("dataworks", {"tz": "+08:00"}),
    "dataworks-one-record": ("dataworks", {"one-record-per-update": True}),
}
WITH_WATERMARKS = [name for name in CONFIGS if name != "canal-json-plain"]


@pytest.fixture(scope="module")
def workload() -> Workload:
    return Workload(SPEC)


@pytest.fixture(scope="module")
def streams(workload: Workload) -> dict[str, Stream]:
    return {name: produce(workload, fmt, options, **PRODUCER) for name, (fmt, options) in CONFIGS.items()}


@pytest.fixture(scope="module")
def events(streams: dict[str, Stream]) -> dict[str, dict[int, list[Event]]]:
    return {name: decoded(stream) for name, stream in streams.items()}


def nonempty(tables: dict[Any, Any]) -> dict[Any, Any]:
    return {name: rows for name, rows in tables.items() if rows}


def expected(workload: Workload, name: str, ts: int | None = None) -> dict[Any, Any]:
    fmt, options = CONFIGS[name]
    oracle = workload.oracle() if ts is None else workload.oracle().at(ts)
    carried = oracle.carried(fmt, ProducerSpec(fmt, options).codec_options())
    return nonempty({n: dict(s.rows) for n, s in carried.tables.items()})


def every_event(partitions: dict[int, list[Event]]) -> list[Event]:
    return [event for events in partitions.values() for event in events]


@pytest.mark.parametrize("name", CONFIGS)
def test_the_stream_applied_is_the_oracle(name: str, workload: Workload, events: dict[str, Any]) -> None:
    assert nonempty(apply(changes(every_event(events[name])))) == expected(workload, name)


@pytest.mark.parametrize("name", CONFIGS)
def test_the_same_seed_gives_the_same_bytes(name: str, streams: dict[str, Stream]) -> None:
    fmt, options = CONFIGS[name]
    again = produce(Workload(SPEC), fmt, options, **PRODUCER)
    assert [(m.key, m.value, m.origin) for m in again] == [(m.key, m.value, m.origin) for m in streams[name]]


@pytest.mark.parametrize("name", WITH_WATERMARKS)
def test_every_partition_gets_every_watermark(name: str, workload: Workload, streams: dict[str, Stream],
                                              events: dict[str, Any]) -> None:
    sent = streams[name].watermarks
    assert len(sent) > 3
    assert sent[-1] >= (workload.summary().last_ts or 0)
    if CONFIGS[name][0] == "dataworks":  # an MHEARTBEAT says milliseconds
        sent = [ts >> 18 for ts in sent]
    for partition_events in events[name].values():
        assert sorted(set(watermarks(partition_events))) == sent  # restarts send some twice


def test_without_the_tidb_extension_canal_json_has_neither_ts_nor_watermarks(events: dict[str, Any]) -> None:
    plain = every_event(events["canal-json-plain"])
    assert not watermarks(plain)
    assert all(e.commit_ts is None for e in plain if isinstance(e, RowChange | Ddl))


@pytest.mark.parametrize("name", ["open", "simple"])
def test_an_unresolved_tail_resolves_to_the_oracle_at_the_last_watermark(name: str, workload: Workload) -> None:
    fmt, options = CONFIGS[name]
    stream = produce(workload, fmt, options, final_watermark=False, **PRODUCER)
    resolved = stream.watermarks[-1]
    assert resolved < (workload.summary().last_ts or 0)
    applied = apply(changes(every_event(decoded(stream)), up_to=resolved))
    assert nonempty(applied) == expected(workload, name, resolved)
    assert expected(workload, name, resolved) != expected(workload, name)


@pytest.mark.parametrize("name", CONFIGS)
def test_a_key_never_leaves_its_partition(name: str, events: dict[str, Any]) -> None:
    partitions_of: dict[Any, set[int]] = defaultdict(set)
    for partition, partition_events in events[name].items():
        for row in partition_events:
            if isinstance(row, RowChange):
                where = (row.database, row.table)
                for image in (row.before, row.after):
                    if image is not None and row.key_columns:
                        partitions_of[(*where, key_of(row.key_columns, image))].add(partition)
                if not row.key_columns:  # a keyless table goes whole to one partition
                    partitions_of[where].add(partition)
    assert partitions_of and all(len(found) == 1 for found in partitions_of.values())
    assert len(set().union(*partitions_of.values())) == 4


@pytest.mark.parametrize("name", CONFIGS)
def test_updates_that_change_the_key_are_split(name: str, events: dict[str, Any]) -> None:
    for row in every_event(events[name]):
        if isinstance(row, RowChange) and row.op is Op.UPDATE and row.key_columns:
            assert key_of(row.key_columns, row.before or {}) == key_of(row.key_columns, row.after or {})


def test_with_the_table_dispatcher_raw_key_updates_stay_whole(workload: Workload) -> None:
    stream = produce(workload, "open", dispatcher="table", output_raw_change_event=True)
    partition_events = decoded(stream)
    rows = [(p, e) for p, es in partition_events.items() for e in es if isinstance(e, RowChange)]
    assert all(len({p for p, e in rows if e.table == table}) == 1 for table in {e.table for _, e in rows})
    assert any(e.op is Op.UPDATE and key_of(e.key_columns, e.before or {}) != key_of(e.key_columns, e.after or {})
               for _, e in rows)
    assert nonempty(apply(changes(every_event(partition_events)))) == expected(workload, "open")


@pytest.mark.parametrize("name", CONFIGS)
def test_ddl_goes_to_every_partition_or_to_partition_0(name: str, events: dict[str, Any]) -> None:
    statements = {p: {e.sql for e in es if isinstance(e, Ddl)} for p, es in events[name].items()}
    every = {sql for found in statements.values() for sql in found}
    assert len(every) == 8
    if CONFIGS[name][0] in ("open", "simple", "simple-avro"):
        assert all(found == every for found in statements.values())
    else:
        assert statements[0] == every and not any(statements[p] for p in (1, 2, 3))


@pytest.mark.parametrize("name", CONFIGS)
def test_restarts_send_a_suffix_again(name: str, workload: Workload, streams: dict[str, Stream]) -> None:
    stream = streams[name]
    assert stream.resent and all(r.count > 0 for r in stream.resent)
    content = {p: [(m.key, m.value) for m in messages] for p, messages in stream.partitions.items()}
    for resent in stream.resent:
        sent = content[resent.partition]
        first, end = resent.first_offset, resent.first_offset + resent.count
        assert sent[first:end] == sent[end:end + resent.count]
    # Without the copies, the stream is the one a producer that never restarted sends.
    copies = {(r.partition, r.first_offset + i) for r in stream.resent for i in range(r.count)}
    fmt, options = CONFIGS[name]
    once = produce(workload, fmt, options, **{**PRODUCER, "duplicates": 0})
    for partition, messages in stream.partitions.items():
        kept = [(m.key, m.value) for m in messages if (partition, m.origin.offset) not in copies]  # type: ignore[union-attr]
        assert kept == [(m.key, m.value) for m in once.partitions[partition]]


def test_open_batches_hold_several_events(streams: dict[str, Stream]) -> None:
    for name, limit in (("open", 16), ("open-updated-columns", 5)):
        decoder = streams[name].decoder()
        sizes = [len(decoder.decode(m)) for m in streams[name]]
        assert 1 < max(sizes) <= limit and min(sizes) == 1
    assert max(sizes) == 5


def test_dataworks_writes_updates_as_pairs_and_heartbeats(streams: dict[str, Stream],
                                                          events: dict[str, Any]) -> None:
    for messages in streams["dataworks"].partitions.values():
        payloads = [orjson.loads(m.value or b"")["payload"] for m in messages]
        ops = [payload["op"] for payload in payloads]
        assert "MHEARTBEAT" in ops
        for i, op in enumerate(ops):
            if op == "UPDATE_BEFOR":
                assert ops[i + 1] == "UPDATE_AFTER"
                assert payloads[i + 1]["sequenceId"] == payloads[i]["sequenceId"]
    joined = [e for e in every_event(events["dataworks"]) if isinstance(e, RowChange) and e.op is Op.UPDATE]
    assert joined and not any(e.meta.get("unpaired") for e in joined)


@pytest.mark.parametrize("name", ["dataworks", "dataworks-one-record"])
def test_dataworks_sequence_ids_number_the_task_in_commit_order(name: str, streams: dict[str, Stream]) -> None:
    """Without watermarks, a DataWorks consumer orders changes across partitions by sequenceId (a row
    against its table's DDL on partition 0): one number per record of the whole task, rising with the
    commits (the workload gives each commit a millisecond of its own, its eventTime)."""
    records: dict[int, set[tuple[int, int, str]]] = defaultdict(set)
    for partition, messages in streams[name].partitions.items():
        for message in messages:
            payload = orjson.loads(message.value or b"")["payload"]
            if payload["op"] != "MHEARTBEAT":
                # A re-sent copy is the same record again; the halves of an update pair differ by op.
                records[int(payload["sequenceId"])].add((payload["timestamp"]["eventTime"], partition, payload["op"]))
    assert len({partition for found in records.values() for _, partition, _ in found}) == 4
    for sequence, found in records.items():
        assert len({(ms, partition) for ms, partition, _ in found}) == 1, f"sequenceId {sequence} names {found}"
        assert len(found) == 1 or {op for _, _, op in found} == {"UPDATE_BEFOR", "UPDATE_AFTER"}
    commit_ms = [next(iter(records[sequence]))[0] for sequence in sorted(records)]
    assert commit_ms == sorted(commit_ms)


# --- Simple protocol BOOTSTRAPs ---


def bootstrap_counts(stream: Stream) -> dict[int, dict[str, int]]:
    counts: dict[int, dict[str, int]] = {}
    for partition, partition_events in decoded(stream).items():
        found = counts.setdefault(partition, defaultdict(int))
        for event in partition_events:
            if isinstance(event, Bootstrap):
                found[event.schema.table] += 1
    return counts


def test_a_table_is_bootstrapped_on_every_partition_before_its_first_row(events: dict[str, Any]) -> None:
    for partition_events in events["simple"].values():
        known: set[str] = set()
        for event in partition_events:
            if isinstance(event, Bootstrap):
                known.add(event.schema.table)
            elif isinstance(event, Ddl) and event.schema_after is not None:
                known.add(event.schema_after.table)
            elif isinstance(event, RowChange):
                assert event.table in known


def test_bootstraps_follow_the_message_count() -> None:
    workload = Workload(WorkloadSpec(seed=8, transactions=300, ddl=False))
    stream = produce(workload, "simple", {"send-bootstrap-in-msg-count": 25, "send-bootstrap-interval-in-sec": 0})
    rows: dict[str, int] = defaultdict(int)
    for event in every_event(decoded(stream)):
        if isinstance(event, RowChange):
            rows[event.table] += 1
    counts = bootstrap_counts(stream)
    assert dict(counts[0]) == {table: 1 + (count - 1) // 25 for table, count in rows.items()}
    assert all(found == counts[0] for found in counts.values())


def test_bootstraps_follow_the_interval() -> None:
    spec = WorkloadSpec(seed=8, transactions=400, ddl=False, key_update_ratio=0, max_gap_ms=40)
    workload = Workload(spec)
    stream = produce(workload, "simple", {"send-bootstrap-in-msg-count": 0, "send-bootstrap-interval-in-sec": 1})
    last_sent: dict[str, int] = {}
    wanted: dict[str, int] = defaultdict(int)
    for commit in workload.commits():
        for row in commit.rows:
            now = (row.commit_ts or 0) >> 18
            if row.table not in last_sent or now - last_sent[row.table] >= 1000:
                last_sent[row.table] = now
                wanted[row.table] += 1
    assert max(wanted.values()) > 2
    assert bootstrap_counts(stream)[0] == wanted


def test_bootstraps_to_partition_0_only_leave_other_partitions_unreadable_alone() -> None:
    workload = Workload(WorkloadSpec(seed=8, transactions=100, ddl=False))
    stream = produce(workload, "simple", {"send-bootstrap-to-all-partition": False})
    partition_events = decoded_leniently(stream)
    assert any(isinstance(e, Bootstrap) for e in partition_events[0])
    for partition in (1, 2, 3):
        assert not any(isinstance(e, Bootstrap) for e in partition_events[partition])
        assert any(isinstance(e, PendingRow) for e in partition_events[partition])


def test_a_consumer_joining_mid_stream_sees_rows_before_their_bootstrap() -> None:
    workload = Workload(WorkloadSpec(seed=8, transactions=300, ddl=False))
    stream = produce(workload, "simple", {"send-bootstrap-in-msg-count": 30})
    messages = stream.partitions[0]
    first_bootstrap = next(i for i, m in enumerate(messages) if b'"BOOTSTRAP"' in (m.value or b""))
    late = stream.starting_at({0: first_bootstrap + 1})
    decoder = late.decoder()
    pending, released = 0, 0
    for message in late.partitions[0]:
        out = decoder.decode(message)
        pending += sum(isinstance(e, PendingRow) for e in out)
        if out and isinstance(out[0], Bootstrap):
            released += sum(isinstance(e, RowChange) for e in out)
    assert pending and released


def decoded_leniently(stream: Stream) -> dict[int, list[Event]]:
    """Every partition decoded alone, pending rows and all."""
    result = {}
    for partition, messages in stream.partitions.items():
        decoder = stream.decoder()
        result[partition] = [e for m in messages for e in decoder.decode(m)]
    return result


# --- settings ---


def test_producer_settings_that_cannot_work_are_refused() -> None:
    with pytest.raises(ProducerError, match="dispatcher='table'"):
        ProducerSpec("open", output_raw_change_event=True)
    with pytest.raises(ProducerError, match="one of index-value, table"):
        ProducerSpec("open", dispatcher="ts")
    with pytest.raises(ProducerError, match="BOOTSTRAP options, and open sends no BOOTSTRAPs"):
        ProducerSpec("open", {"send-bootstrap-in-msg-count": 5}).bootstrap_options()
    with pytest.raises(OptionError, match="unknown option"):
        ProducerSpec("canal-json", {"enable-tidb-extensions": True}).codec_options()
    with pytest.raises(OptionError, match="unknown format"):
        ProducerSpec("debezium")


def test_a_stream_summary_counts_its_messages(streams: dict[str, Stream]) -> None:
    stream = streams["simple"]
    first, second = stream.lines()
    assert f"{len(stream)} messages in 4 partitions" in first
    assert f"{sum(r.count for r in stream.resent)} messages re-sent" in second
    assert all(isinstance(e, Watermark) for e in stream.decoder().decode(stream.partitions[0][-1]))
