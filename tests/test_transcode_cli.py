"""``cdclake produce`` and the command-line side of ``cdclake transcode`` (the job itself runs in
tests/spark/test_transcode.py)."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cdclake.cli import app
from cdclake.cli_transcode import paced, workload_from_pairs
from cdclake.model import RawMessage
from cdclake.sources.captured import read_partition
from cdclake.transcode.spec import TranscodeSpec
from cdclake.transcode.state import Progress
from cdclake.workload import ProducerSpec, Workload, WorkloadSpec, produce

runner = CliRunner()


def test_produce_writes_the_workload_stream_to_a_captured_topic(tmp_path: Path) -> None:
    result = runner.invoke(app, ["produce", "--format", "simple", "--to", str(tmp_path / "orders"), "-w", "seed=4",
                                 "-w", "transactions=30", "-o", "send-bootstrap-in-msg-count=5", "--partitions", "3",
                                 "--duplicates", "1"])
    assert result.exit_code == 0, result.output
    expected = produce(Workload(WorkloadSpec(seed=4, transactions=30)), "simple", {"send-bootstrap-in-msg-count": 5},
                       partitions=3, duplicates=1, topic="orders")
    for partition, messages in expected.partitions.items():
        assert [m.value for m in read_partition(tmp_path, "orders", partition)] == [m.value for m in messages]
    (said,) = result.stderr.splitlines()  # one line, however long, off a terminal too
    sent = sum(map(len, expected.partitions.values()))
    assert re.fullmatch(rf"{sent} messages to {re.escape(str(tmp_path / 'orders'))} in [0-9.]+s \([0-9,]+/s\); "
                        r"[0-9]+ watermark rounds, [1-9][0-9]* messages re-sent", said), said


def test_workload_settings_are_read_as_their_fields_types() -> None:
    spec = workload_from_pairs({"seed": "9", "rows-per-transaction": "3", "rename_table": "true",
                                "update_ratio": "0.5", "start": "2025-01-02T03:04:05+00:00"})
    assert spec == WorkloadSpec(seed=9, rows_per_transaction=3, rename_table=True, update_ratio=0.5,
                                start=dt.datetime(2025, 1, 2, 3, 4, 5, tzinfo=dt.UTC))
    with pytest.raises(ValueError, match="not a workload setting"):
        workload_from_pairs({"seeds": "1"})
    with pytest.raises(ValueError, match="expected a int"):
        workload_from_pairs({"seed": "x"})


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_paced_messages_keep_to_the_rate() -> None:
    clock = _Clock()
    messages = [RawMessage(None, bytes([i])) for i in range(5)]
    assert list(paced(messages, rate=2, clock=clock)) == messages
    assert clock.now == pytest.approx(102.0)  # five messages at two a second: the last at 2 s
    assert list(paced(messages, rate=0, clock=clock)) == messages


@pytest.mark.parametrize(("args", "says"), [
    (["--source", "kafka://broker:9092"], "kafka://HOST:PORT"),
    (["--from", "protobuf"], "unknown format"),
    # Refused before Spark starts: a target option of no format, a Simple option for another target, and
    # the root of captured topics instead of a topic's own directory.
    (["--to-option", "bogus=1"], "unknown option bogus"),
    (["--to", "canal-json", "--to-option", "send-bootstrap-in-msg-count=5"], "canal-json sends no BOOTSTRAPs"),
    (["--source", "ROOT"], "its topics: t"),
])
def test_a_wrong_transcode_command_line_exits_with_status_2(tmp_path: Path, args: list[str], says: str) -> None:
    (tmp_path / "in" / "t" / "0").mkdir(parents=True)
    base = {"--from": "open", "--to": "simple", "--source": str(tmp_path / "in" / "t"),
            "--target": str(tmp_path / "out" / "t"), "--state": str(tmp_path / "state")}
    base.update(dict(zip(args[::2], args[1::2], strict=True)))
    if base["--source"] == "ROOT":
        base["--source"] = str(tmp_path / "in")
    result = runner.invoke(app, ["transcode", *[part for pair in base.items() for part in pair]])
    assert result.exit_code == 2
    assert says in _unwrapped(result.output)


def test_a_state_made_by_other_settings_is_refused_before_spark_starts(tmp_path: Path) -> None:
    (tmp_path / "in" / "t" / "0").mkdir(parents=True)
    other = TranscodeSpec("open", {}, ProducerSpec("canal-json", {}, partitions=1, topic="t"))
    Progress(other.settings()).save(tmp_path / "state")
    result = runner.invoke(app, ["transcode", "--from", "open", "--to", "simple", "--source",
                                 str(tmp_path / "in" / "t"), "--target", str(tmp_path / "out" / "t"),
                                 "--state", str(tmp_path / "state")])
    assert result.exit_code == 2
    assert "made by a transcode with other settings" in _unwrapped(result.output)


def test_produce_refuses_bootstrap_options_for_a_format_without_bootstraps(tmp_path: Path) -> None:
    result = runner.invoke(app, ["produce", "--format", "open", "--to", str(tmp_path / "t"), "-w", "transactions=5",
                                 "-o", "send-bootstrap-in-msg-count=5"])
    assert result.exit_code == 2
    assert "open sends no BOOTSTRAPs" in _unwrapped(result.output)
    assert not (tmp_path / "t").exists()


def _unwrapped(output: str) -> str:
    """The error text as one line: the words of rich's wrapped panel, without its borders."""
    return " ".join(output.replace("│", " ").split())
