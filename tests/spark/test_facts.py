"""What the ordering core gathers of a batch in one pass (cdclake.spark.ordering.Facts): here, the first
mark each partition's records carry, from which the Replicator learns a partition's pace after one batch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cdclake.sources.captured import CapturedTopics
from cdclake.sources.ranges import OffsetRange
from cdclake.spark.changes import CHANGE_DDL, DecodeTask, decode_tasks
from cdclake.spark.ordering import Facts
from cdclake.spark.tasks import one_task_each
from cdclake.workload import Workload, WorkloadSpec, produce, write_captured


def _decoded(spark: Any, tmp_path: Path, options: dict[str, Any]) -> Any:
    """Every record of a captured Canal-JSON stream over several partitions, decoded, from its middle on: a
    batch's first mark is not its partition's first."""
    stream = produce(Workload(WorkloadSpec(seed=5, transactions=60, tables=4)), "canal-json", options,
                     partitions=3)
    write_captured(stream, tmp_path, stream.topic)
    source = CapturedTopics(tmp_path)
    ranges = [OffsetRange(topic, partition, (extent.low + extent.high) // 2, extent.high)
              for (topic, partition), extent in sorted(source.extents().items())]
    return one_task_each(spark, [DecodeTask(r, ()) for r in ranges],
                         lambda mine: decode_tasks(source, "canal-json", options, mine), CHANGE_DDL)


def _first_by_offset(rows: list[Any], mark: str) -> dict[tuple[str, int], tuple[int, int]]:
    first: dict[tuple[str, int], tuple[int, int]] = {}
    for row in sorted(rows, key=lambda row: (row["offset"], row["index"])):
        first.setdefault((row["topic"], row["partition"]), (row["offset"], int(row[mark])))
    return first


def test_the_first_watermark_of_each_partition_is_its_first_mark(spark: Any, tmp_path: Path) -> None:
    decoded = _decoded(spark, tmp_path, {"enable-tidb-extension": True})

    facts = Facts.of(decoded)

    watermarks = decoded.filter("kind = 'watermark'").collect()
    assert len({(row["topic"], row["partition"]) for row in watermarks}) == 3
    assert facts.first_marks == _first_by_offset(watermarks, "commit_ts")


@pytest.mark.parametrize("options", [{}, {"content-compatible": True}], ids=["plain", "content-compatible"])
def test_without_watermarks_the_first_change_sequence_of_each_partition_is_its_first_mark(
        spark: Any, tmp_path: Path, options: dict[str, Any]) -> None:
    decoded = _decoded(spark, tmp_path, options)

    facts = Facts.of(decoded, sequences=True)

    changes = decoded.filter("kind IN ('row', 'ddl') AND sequence IS NOT NULL").collect()
    assert len({(row["topic"], row["partition"]) for row in changes}) == 3
    assert facts.first_marks == _first_by_offset(changes, "sequence")
