"""TiCDC's large messages replicated (issue 22): a claim-check stream, its files read on the executors,
gives the oracle's tables; a handle-key-only row stops the job, naming it and the option, and with
``on-handle-key-only=dead-letter`` each one is a dead letter the batch reports count."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cdclake.model import LargeMessageKind
from cdclake.spark.changes import decode_task_error
from cdclake.workload import Workload, WorkloadSpec, produce, shrink_large_messages
from tests.spark.jobs import Job, lake_differences, replicate
from tests.spark.streams import write

OPTIONS = {"enable-tidb-extension": True}
LARGER_THAN = 300


def test_claim_check_rows_are_replicated_and_handle_key_only_rows_stop_the_job_or_are_dead_letters(
        spark: Any, tmp_path: Path) -> None:
    workload = Workload(WorkloadSpec(seed=11, transactions=30, tables=3))
    stream = produce(workload, "canal-json", OPTIONS, duplicates=1, watermark_interval_ms=50)
    claimed = shrink_large_messages(stream, LargeMessageKind.CLAIM_CHECK, LARGER_THAN, str(tmp_path / "claim-check"))
    write(tmp_path / "claimed", claimed.topic, claimed.partitions)

    reports = replicate(spark, Job("claim_check", "canal-json", claimed.codec_options), tmp_path / "claimed")

    assert sum(report.dead_letters for report in reports) == 0
    expected = workload.oracle().carried("canal-json", claimed.codec_options).tables
    assert lake_differences(spark, Job("claim_check", "canal-json"), expected) == []

    shrunk = shrink_large_messages(stream, LargeMessageKind.HANDLE_KEY_ONLY, LARGER_THAN)
    count = sum(a.value != b.value for a, b in zip(stream, shrunk, strict=True))
    write(tmp_path / "shrunk", shrunk.topic, shrunk.partitions)
    with pytest.raises(Exception) as stopped:  # Spark's own, holding the task's traceback as text
        replicate(spark, Job("handle_key_only", "canal-json", OPTIONS), tmp_path / "shrunk")
    reason = decode_task_error(stopped.value)
    assert reason is not None and "came as its handle key only" in reason, stopped.value
    assert "on-handle-key-only=dead-letter" in reason

    going_on = Job("handle_key_only_dead", "canal-json", {**OPTIONS, "on-handle-key-only": "dead-letter"})
    reports = replicate(spark, going_on, tmp_path / "shrunk")
    assert count > 0 and sum(report.dead_letters for report in reports) == count
