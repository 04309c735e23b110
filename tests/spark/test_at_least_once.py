"""At-least-once input: what TiCDC's producer may deliver beyond the clean stream gives the same tables.

A stream of the upstream simulator, produced clean, is disordered as an at-least-once producer may
deliver it (tests/spark/streams.py, :class:`AtLeastOnce`): ranges of every partition delivered again
right after themselves, single messages delivered twice on several partitions, watermarks delivered
late and older watermarks delivered again after newer ones. Replicated in several batches, whose
boundaries fall inside the disorder, it must leave every table equal to the simulator's oracle and the
changelog holding each change of the clean stream once.

A partition far behind the others (its messages but the first few arrive only after everything else
was replicated) holds every table at the resolved ts its last watermark allows — the oracle at that ts
— and once it arrives the tables are whole.

A table with many versions of one hot key in one batch takes one MERGE and ends with the last version.

Three formats with watermarks, each carrying them differently: Open Protocol (Resolved events inside
batched messages), Simple (WATERMARK messages and BOOTSTRAPs) and Canal-JSON with the TiDB extension.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import orjson
import pytest

from cdclake.model import Watermark
from cdclake.sources.captured import CapturedTopicWriter
from cdclake.workload import Stream, Workload, WorkloadSpec, produce
from tests.spark.jobs import CASES, Job, changelog_count, lake_differences, replicate, row_changes
from tests.spark.streams import AtLeastOnce, decoded_in_order, far_behind, write

SPEC = WorkloadSpec(seed=23, transactions=24, rename_table=True, tables=3)
FORMATS = ("open", "simple", "canal-json")


def _past_watermarks(stream: Stream, partition: int, count: int) -> int:
    """How many of the partition's first messages hold its first ``count`` watermarks."""
    seen = 0
    for offset, (_, _, events) in enumerate(decoded_in_order(
            stream.spec.format_name, stream.codec_options, {partition: stream.partitions[partition]})):
        seen += any(isinstance(event, Watermark) for event in events)
        if seen == count:
            return offset + 1
    raise AssertionError(f"partition {partition} has fewer than {count} watermarks")


def _job(tag: str, case: str, batches: int, messages: int) -> Job:
    format_name, options = CASES[case]
    return Job(f"alo_{tag}_{case.replace('-', '_')}", format_name, options, max_records=messages // batches + 1)


def disordered_stream(case: str) -> tuple[Workload, Stream, AtLeastOnce]:
    """The workload, its clean stream in the case's format, and that stream disordered (bench/injected.py
    reports how much)."""
    format_name, options = CASES[case]
    workload = Workload(SPEC)
    clean = produce(workload, format_name, options, watermark_interval_ms=50)
    disordered = AtLeastOnce(clean, seed=7)
    disordered.redeliver_ranges(per_partition=2, longest=12)
    disordered.duplicate_messages(count=12, window=6)
    disordered.delay_watermarks(count=6, by=8)
    disordered.repeat_watermarks(count=6)
    return workload, clean, disordered


@pytest.mark.parametrize("case", FORMATS)
def test_redelivered_duplicated_and_late_or_repeated_watermarks_give_the_clean_streams_tables(
        spark: Any, tmp_path: Path, case: str) -> None:
    format_name, _ = CASES[case]
    workload, clean, disordered = disordered_stream(case)
    done = disordered.disorder
    assert done.redelivered_ranges == 2 * len(clean.partitions) and done.redelivered_messages > 0
    assert len(done.duplicate_partitions) == len(clean.partitions) and done.duplicated_messages == 12
    assert (done.delayed_watermarks, done.repeated_watermarks) == (6, 6)
    write(tmp_path, clean.topic, disordered.partitions)
    delivered = sum(map(len, disordered.partitions.values()))
    job = _job("disorder", case, batches=3, messages=delivered)

    reports = replicate(spark, job, tmp_path)

    assert len(reports) >= 3, "the disorder must straddle batch boundaries"
    assert lake_differences(spark, job, workload.oracle().carried(format_name, clean.codec_options).tables) == []
    assert changelog_count(spark, job) == row_changes(clean)
    assert spark.table(job.system_table("dead_letters")).count() == 0


@pytest.mark.parametrize("case", FORMATS)
def test_a_partition_far_behind_holds_the_tables_at_its_watermark_and_loses_nothing(
        spark: Any, tmp_path: Path, case: str) -> None:
    format_name, options = CASES[case]
    workload = Workload(SPEC)
    clean = produce(workload, format_name, options, watermark_interval_ms=50)
    behind = max(clean.partitions, key=lambda p: len(clean.partitions[p]))
    kept = _past_watermarks(clean, behind, 2)
    first, rest = far_behind(clean.partitions, behind, kept)
    assert len(rest[behind]) > kept, "most of the partition comes last"
    write(tmp_path, clean.topic, first)
    job = _job("behind", case, batches=2, messages=len(clean))

    reports = replicate(spark, job, tmp_path)

    resolved = reports[-1].resolved_ts
    assert resolved, "the lagging partition's first messages carry a watermark"
    assert resolved < max(commit.commit_ts for commit in workload.commits()), "it holds the tables back"
    held = workload.oracle().at(resolved).carried(format_name, clean.codec_options)
    assert lake_differences(spark, job, held.tables) == []

    write(tmp_path, clean.topic, rest)
    reports = replicate(spark, job, tmp_path)

    assert len(reports) == 1, "its messages all arrive in the last batch"
    assert lake_differences(spark, job, workload.oracle().carried(format_name, clean.codec_options).tables) == []
    assert changelog_count(spark, job) == row_changes(clean)


# --- a hot key --------------------------------------------------------------------------------------

HOT_TOPIC = "hot-key"
VERSIONS = 500
FIRST_TS = 449460046135296000


def _open_message(event_key: dict[str, Any], event_value: dict[str, Any] | None) -> tuple[bytes, bytes]:
    """One Open Protocol event as a message of its own: protocol version 1, then the length-prefixed
    event key; the value its length-prefixed event value (empty for a Resolved event)."""
    key = orjson.dumps(event_key)
    value = orjson.dumps(event_value) if event_value is not None else b""
    return struct.pack(">qq", 1, len(key)) + key, struct.pack(">q", len(value)) + value


def _hot_row(ts: int, ident: int, v: int) -> tuple[bytes, bytes]:
    return _open_message({"ts": ts, "scm": "hot", "tbl": "t", "t": 1},
                         {"u": {"id": {"t": 3, "h": True, "v": ident}, "v": {"t": 3, "v": v}}})


def _resolved(ts: int) -> tuple[bytes, bytes]:
    return _open_message({"ts": ts, "t": 3}, None)


def _hot_table_stream(root: Path) -> None:
    """CREATE TABLE hot.t (id, v) and row 0, then a Resolved above them. One partition: a key's
    changes all go to one."""
    _append(root, [_open_message({"ts": FIRST_TS, "scm": "hot", "tbl": "t", "t": 2},
                                 {"q": "CREATE TABLE hot.t (id int primary key, v int)", "t": 3}),
                   _hot_row(FIRST_TS + 1, 0, -1), _resolved(FIRST_TS + 2)])


def _hot_key_stream(root: Path) -> None:
    """Then id 1 inserted and updated ``VERSIONS - 1`` times (v = 0, 1, ...), each in a transaction of
    its own with a few other keys' single changes between; then a Resolved above them all."""
    events = []
    for version in range(VERSIONS):
        ts = FIRST_TS + (version + 1) * (1 << 18)
        events.append(_hot_row(ts, 1, version))
        if version % 50 == 0:
            events.append(_hot_row(ts + 1, 2 + version // 50, version))
    _append(root, [*events, _resolved(FIRST_TS + (VERSIONS + 2) * (1 << 18))])


def _append(root: Path, events: list[tuple[bytes, bytes]]) -> None:
    with CapturedTopicWriter(root, HOT_TOPIC) as writer:
        for key, value in events:
            writer.append(0, key, value, timestamp_ms=FIRST_TS >> 18)


def test_many_versions_of_a_hot_key_in_one_batch_take_one_merge_and_end_with_the_last(
        spark: Any, tmp_path: Path) -> None:
    """The table is new in batch 1 (its first changes appended); the hot key's versions, in batch 2,
    reach it in one MERGE."""
    job = Job("alo_hot_key", "open")
    _hot_table_stream(tmp_path)
    assert [report.changes_applied for report in replicate(spark, job, tmp_path)] == [1]
    _hot_key_stream(tmp_path)

    reports = replicate(spark, job, tmp_path)

    assert len(reports) == 1 and reports[0].changes_applied == VERSIONS + VERSIONS // 50
    table = job.lake_name("hot", "t")
    rows = sorted((row["id"], row["v"]) for row in spark.table(table).collect())
    assert rows == [(0, -1), (1, VERSIONS - 1), *((2 + n, 50 * n) for n in range(VERSIONS // 50))]
    snapshots = spark.sql(f"SELECT summary FROM {table}.snapshots ORDER BY committed_at").collect()
    # One commit per batch. (A MERGE that only inserts commits as an "append": Iceberg 1.12 names a
    # row delta by what it wrote.)
    assert [s["summary"].get("cdclake.batch") for s in snapshots] == ["1", "2"]
    assert changelog_count(spark, job) == 1 + VERSIONS + VERSIONS // 50
