"""Bad input in the stream: malformed messages of every kind the decoders' fuzzers make, mixed into good
traffic, each land in the dead-letter table raw and whole with its reason and coordinates, every good
change is applied, and the batch reports count them. With ``on-bad-message = fail`` the job stops at
the first one, names it, and has committed nothing of the batch that holds it, nor anything after.

How the malformed messages are made and chosen (a decoder must refuse each, in sequence and at a
batch's start): tests/spark/streams.py.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from cdclake.ordering.bad_messages import BadMessageError
from cdclake.sinks.iceberg import tables
from cdclake.sinks.iceberg.state import load_state
from cdclake.workload import Workload, WorkloadSpec, produce
from tests.spark.jobs import (
    CASES,
    Job,
    changelog_count,
    dead_letter_mismatches,
    lake_differences,
    replicate,
    row_changes,
)
from tests.spark.streams import malformed_kinds, mix_malformed, random_slots, write

SPEC = WorkloadSpec(seed=11, transactions=40, rename_table=True, tables=3)


@pytest.mark.parametrize("case", CASES)
def test_malformed_messages_go_to_the_dead_letters_and_every_good_change_is_applied(
        spark: Any, tmp_path: Path, case: str) -> None:
    format_name, options = CASES[case]
    workload = Workload(SPEC)
    stream = produce(workload, format_name, options, duplicates=1, watermark_interval_ms=50)
    partitions, malformed = mix_malformed(stream, random_slots(stream, per_kind=2, seed=1), seed=2)
    assert {m.kind for m in malformed} == set(malformed_kinds(format_name))
    write(tmp_path, stream.topic, partitions)
    job = Job(f"bad_{case.replace('-', '_')}", format_name, options, max_records=len(stream) // 2 + 1)

    reports = replicate(spark, job, tmp_path)

    assert sum(report.dead_letters for report in reports) == len(malformed)
    assert dead_letter_mismatches(spark, job, malformed) == []
    assert lake_differences(spark, job, workload.oracle().carried(format_name, stream.codec_options).tables) == []
    clean = row_changes(produce(workload, format_name, options, watermark_interval_ms=50))
    if case == "canal-json-plain":
        # Without commit ts, a re-sent copy of the millisecond a batch ended in is applied again (harmless
        # to the table: see Ordering.not_yet_applied), so the changelog may repeat it.
        assert changelog_count(spark, job) >= clean
    else:
        assert changelog_count(spark, job) == clean


def test_fail_fast_stops_at_the_malformed_message_having_committed_nothing_past_it(
        spark: Any, tmp_path: Path) -> None:
    """The job stops in the batch that reads the malformed message (in the middle of a partition: not the
    first batch), names it, and leaves every table, the changelog and the offsets as the batch before
    left them; a job that then dead-letters it goes on from there and loses nothing."""
    workload = Workload(SPEC)
    stream = produce(workload, "open", watermark_interval_ms=50)
    middle = len(stream.partitions[1]) // 2
    partitions, (bad,) = mix_malformed(stream, [(1, middle, "truncate")], seed=3)
    write(tmp_path, stream.topic, partitions)
    job = Job("fail_fast", "open", max_records=len(stream) // 3 + 1, on_bad_message="fail")

    with pytest.raises(BadMessageError) as stopped:
        replicate(spark, job, tmp_path)

    assert f"{stream.topic}[1]@{middle}: " in str(stopped.value)
    state, _ = load_state(spark, "lake", job.namespace)
    assert state.batch >= 1, "a batch before the failing one committed"
    assert any(planned.partition == 1 and planned.start <= middle < planned.end for planned in state.plan), \
        "the failing batch, the one that reads the malformed message, is planned and not committed"
    assert state.positions[(stream.topic, 1)].next_offset <= middle
    written = [job.system_table("changelog"), *(known.lake_table for known in state.tables.values())]
    assert all(tables.last_step(spark, table)[0] <= state.batch for table in written)
    past = spark.table(job.system_table("changelog")).filter(f"`partition` = 1 AND `offset` >= {middle}")
    assert past.count() == 0
    assert spark.table(job.system_table("dead_letters")).count() == 0

    replicate(spark, dataclasses.replace(job, on_bad_message="dead-letter"), tmp_path)
    assert dead_letter_mismatches(spark, job, [bad]) == []
    assert lake_differences(spark, job, workload.oracle().carried("open", stream.codec_options).tables) == []


def test_fail_fast_names_the_first_malformed_message_of_its_partition(spark: Any, tmp_path: Path) -> None:
    workload = Workload(SPEC)
    stream = produce(workload, "open", watermark_interval_ms=50)
    partitions, malformed = mix_malformed(stream, [(0, 9, "truncate"), (0, 9, "flip")], seed=4)
    assert sorted(m.coordinates for m in malformed) == [(0, 9), (0, 10)]
    write(tmp_path, stream.topic, partitions)
    job = Job("fail_fast_first", "open", on_bad_message="fail")

    with pytest.raises(BadMessageError) as stopped:
        replicate(spark, job, tmp_path)

    assert f"{stream.topic}[0]@9: " in str(stopped.value)
