"""Compaction of merge-on-read mirrors (``cdclake maintain``, and the job's ``compact-every-s``): the
delete files the MERGEs wrote are gone, the rows are as they were, replication carries on, and a batch
recovering after a crash that a compaction followed applies none of its steps twice.

The stream is Canal-JSON without watermarks and without re-sent copies, so that every batch applies
changes (and each MERGE writes delete files); it is replicated in two halves, the compaction between.
"""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from cdclake.sinks.iceberg.compaction import delete_files
from cdclake.sinks.iceberg.tables import BATCH_PROPERTY, STEP_PROPERTY
from cdclake.sources.captured import CapturedTopics
from cdclake.spark.maintain import maintain
from cdclake.spark.replicate import Replicator
from cdclake.workload import Stream, Workload, WorkloadSpec, produce
from tests.spark.jobs import Job, lake_differences
from tests.spark.streams import write

pytestmark = pytest.mark.spark
_names = itertools.count()


def _job_and_stream() -> tuple[Job, Workload, Stream]:
    workload = Workload(WorkloadSpec(seed=23, transactions=60))
    stream = produce(workload, "canal-json", {}, duplicates=0)
    # Several batches per half: MERGE after MERGE into the same tables.
    job = Job(f"maint_{next(_names)}", "canal-json", stream.codec_options, max_records=len(stream) // 6 + 1)
    return job, workload, stream


def _write_half(root: Path, stream: Stream, second: bool) -> None:
    halves = {p: messages[len(messages) // 2:] if second else messages[:len(messages) // 2]
              for p, messages in stream.partitions.items()}
    write(root, stream.topic, halves)


def _replicator(spark: Any, job: Job, root: Path) -> Replicator:
    # compact-every-s = 0: only the test compacts, where it says.
    return Replicator(spark, CapturedTopics(root), job.config(compact_every_s=0))


def _mirrors(spark: Any, job: Job) -> list[str]:
    """The lake names of the job's mirrors that exist."""
    replicator = Replicator(spark, None, job.config())
    state, _ = replicator.sink.load_state()
    return [known.lake_table for known in state.tables.values() if spark.catalog.tableExists(known.lake_table)]


def _rows(spark: Any, table: str) -> list[tuple[Any, ...]]:
    return sorted((tuple(row) for row in spark.table(table).collect()), key=repr)


def _live_delete_files(spark: Any, table: str) -> int:
    return int(spark.sql(f"SELECT count(*) FROM {table}.delete_files").collect()[0][0])


def test_the_job_compacts_its_mirrors_on_its_own_cadence(spark: Any, tmp_path: Path) -> None:
    """``compact-every-s`` always due: after each batch the job compacts what its MERGEs left, so it
    ends with no delete file and the tables right."""
    job, workload, stream = _job_and_stream()
    write(tmp_path, stream.topic, stream.partitions)
    reports = Replicator(spark, CapturedTopics(tmp_path), job.config(compact_every_s=1e-9)).run(once=True)
    assert sum(report.changes_applied > 0 for report in reports) >= 3
    mirrors = _mirrors(spark, job)
    assert {table: _live_delete_files(spark, table) for table in mirrors} == dict.fromkeys(mirrors, 0)
    assert any(_compactions(spark, table) for table in mirrors)
    assert lake_differences(spark, job, workload.oracle().carried("canal-json", stream.codec_options).tables) == []


def _compactions(spark: Any, table: str) -> int:
    """The table's commits that rewrote files without changing rows (Iceberg's ``replace``)."""
    return int(spark.sql(f"SELECT count(*) FROM {table}.snapshots WHERE operation = 'replace'").collect()[0][0])


class Crash(Exception):
    """The job dying after its tables are applied, before its state is committed."""


def test_maintain_compacts_and_a_batch_recovering_after_a_compaction_applies_no_step_twice(
        spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``cdclake maintain`` after the first half removes the delete files and keeps the rows. Then,
    replicating the second half, a compaction commits after a batch's MERGEs and before its state (as
    ``cdclake maintain`` run beside the job may): the tables' newest snapshots then carry no batch. The
    batch run again must still find each table's steps done, so no (batch, step) is committed twice to
    any table, and replication carries on to tables equal to the upstream.

    One test, not two: both replicate the same first half, the run's costliest part."""
    job, workload, stream = _job_and_stream()
    _write_half(tmp_path, stream, second=False)
    assert len(_replicator(spark, job, tmp_path).run(once=True)) >= 3
    mirrors = _mirrors(spark, job)
    holding = {table for table in mirrors if _live_delete_files(spark, table)}
    assert holding, "no MERGE wrote a delete file: nothing to compact"
    before = {table: _rows(spark, table) for table in mirrors}

    compacted = maintain(spark, "lake", job.namespace)

    assert {done.table for done in compacted} == holding
    assert all(done.delete_files_before > 0 and done.delete_files_after == 0 for done in compacted)
    assert {table: _live_delete_files(spark, table) for table in mirrors} == dict.fromkeys(mirrors, 0)
    assert {table: _rows(spark, table) for table in mirrors} == before
    assert maintain(spark, "lake", job.namespace) == []  # nothing left to compact

    _write_half(tmp_path, stream, second=True)
    crashing = _replicator(spark, job, tmp_path)
    crashed: list[tuple[int, list[str]]] = []

    def compact_then_crash(state: Any, batch: int, pending: Any) -> None:
        compacted = crashing.sink.compact([known.lake_table for known in state.tables.values()])
        crashed.append((batch, [done.table for done in compacted]))
        raise Crash

    monkeypatch.setattr(crashing.sink, "commit", compact_then_crash)
    with pytest.raises(Crash):
        crashing.step()
    batch, compacted_tables = crashed[0]
    # The first half's delete files are gone (maintain above): what this compaction finds, the crashed
    # batch's own MERGEs wrote.
    merged_then_compacted = [table for table in compacted_tables if _newest_step(spark, table)[0] == batch]
    assert merged_then_compacted, "no table the crashed batch merged into was compacted after it"
    for table in merged_then_compacted:
        newest = spark.sql(f"SELECT summary FROM {table}.snapshots ORDER BY committed_at DESC LIMIT 1").collect()
        assert BATCH_PROPERTY not in newest[0]["summary"]  # the compaction's
        assert crashing.sink.last_step(table) == _newest_step(spark, table)

    _replicator(spark, job, tmp_path).run(once=True)
    twice = {table: steps for table in _mirrors(spark, job) if (steps := _steps_committed_twice(spark, table))}
    assert twice == {}
    assert lake_differences(spark, job, workload.oracle().carried("canal-json", stream.codec_options).tables) == []


def _steps(spark: Any, table: str) -> list[tuple[int, int]]:
    """Every (batch, step) the table's snapshots carry, newest first."""
    rows = spark.sql(f"SELECT summary FROM {table}.snapshots ORDER BY committed_at DESC").collect()
    return [(int(row["summary"][BATCH_PROPERTY]), int(row["summary"][STEP_PROPERTY]))
            for row in rows if BATCH_PROPERTY in row["summary"]]


def _newest_step(spark: Any, table: str) -> tuple[int, int]:
    return _steps(spark, table)[0]


def _steps_committed_twice(spark: Any, table: str) -> list[tuple[int, int]]:
    return sorted(step for step, count in Counter(_steps(spark, table)).items() if count > 1)


def test_the_delete_file_count_is_read_from_the_current_snapshot(spark: Any, tmp_path: Path) -> None:
    """What decides whether a table is compacted: its current snapshot's ``total-delete-files``, which
    is what the ``delete_files`` metadata table lists, and 0 for a table without snapshots."""
    table = f"`lake`.`maint_{next(_names)}`.`t`"
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {table.rsplit('.', 1)[0]}")
    spark.sql(f"CREATE TABLE {table} (id int, v string) USING iceberg TBLPROPERTIES ('format-version'='2', "
              "'write.delete.mode'='merge-on-read')")
    assert delete_files(spark, table) == 0
    spark.sql(f"INSERT INTO {table} VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    spark.sql(f"DELETE FROM {table} WHERE id = 2")
    assert delete_files(spark, table) == _live_delete_files(spark, table) > 0
