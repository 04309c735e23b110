"""A batch's progress while it runs (cdclake.spark.reporting): the decoding tasks count what they read
and decode into an accumulator, without a Spark job of their own, and each batch moves through its
phases in order, ending with every table it writes done and exact counts."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from cdclake.sources.captured import CapturedTopics
from cdclake.sources.ranges import OffsetRange
from cdclake.spark.changes import CHANGE_DDL, DecodeTask, decode_tasks
from cdclake.spark.replicate import Replicator
from cdclake.spark.reporting import PHASES, BatchProgress, counting, read_counter
from cdclake.spark.tasks import one_task_each
from cdclake.workload import Workload, WorkloadSpec, produce, write_captured
from tests.spark.jobs import Job, row_changes

_runs = itertools.count()


def _captured(tmp_path: Path) -> Any:
    stream = produce(Workload(WorkloadSpec(seed=11, transactions=20, tables=3)), "canal-json",
                     {"enable-tidb-extension": True})
    write_captured(stream, tmp_path, stream.topic)
    return stream


def test_decoding_tasks_count_the_records_read_and_the_rows_decoded(spark: Any, tmp_path: Path) -> None:
    stream = _captured(tmp_path)
    source = CapturedTopics(tmp_path)
    ranges = [OffsetRange(topic, partition, extent.low, extent.high)
              for (topic, partition), extent in sorted(source.extents().items())]
    counter = read_counter(spark)
    options = {"enable-tidb-extension": True}
    work = counting(lambda mine: decode_tasks(source, "canal-json", options, mine), counter)
    decoded = one_task_each(spark, [DecodeTask(r, ()) for r in ranges], work, CHANGE_DDL)

    rows = decoded.filter("kind = 'row'").count()

    assert rows > 0
    assert counter.value == (len(stream), rows)


def test_each_batch_moves_through_its_phases_in_order(spark: Any, tmp_path: Path) -> None:
    stream = _captured(tmp_path)
    job = Job(f"progress_{next(_runs)}", "canal-json", {"enable-tidb-extension": True}, len(stream) // 2 + 1)
    heard: list[BatchProgress] = []
    decoded: list[int] = []

    reports = Replicator(spark, CapturedTopics(tmp_path), job.config(), on_progress=heard.append).run(once=True)

    assert len(reports) >= 2
    for report in reports:
        moves = [move for move in heard if move.batch == report.batch]
        phases = [move.phase for move in moves]
        assert phases[0] == "reading" and phases[-1] == "committing", phases
        assert [PHASES.index(phase) for phase in phases] == sorted(PHASES.index(phase) for phase in phases)
        assert all(move.records == report.records for move in moves)
        assert all(move.records_read <= move.records for move in moves)
        last = moves[-1]
        assert last.records_read == report.records
        # Every table the batch wrote rows to is done; so is any it only ran a DDL on.
        assert last.tables == last.tables_done >= len(report.tables)
        done = [move.tables_done for move in moves if move.phase == "applying"]
        assert done == list(range(last.tables + 1)), done
        decoded.append(last.changes_decoded)
    assert sum(decoded) == row_changes(stream) > 0
    assert any(report.tables for report in reports)
