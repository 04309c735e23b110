"""The replication commands fail fast and say one thing, before Spark starts: a wrong format, an
unreachable broker, a missing topic; the demo never deletes a directory that is not its own; and
replicate ends with a one-line summary on stdout, on a line of its own."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from typer.testing import CliRunner

import cdclake.cli_replicate
import cdclake.sources.kafka
from cdclake.cli import app
from cdclake.cli_replicate import DEAD_LETTERS_EXIT, progress_line, run_summary
from cdclake.spark.reporting import BatchProgress, BatchReport
from tests.kafka import Kafka
from tests.sources.test_capture import plain

runner = CliRunner()


@pytest.fixture
def no_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    """Starting Spark fails the test: each case here must be decided before."""

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("Spark was started")

    monkeypatch.setattr(cdclake.cli_replicate, "build_session", refuse)


def test_a_wrong_format_is_a_usage_error(no_spark: None) -> None:
    result = runner.invoke(app, ["replicate", "-b", "127.0.0.1:1", "-t", "x", "--format", "opne", "--once"])
    assert result.exit_code == 2, result.output
    assert "unknown format 'opne'; formats: open, canal-json" in result.output


def test_a_wrong_format_option_is_a_usage_error(no_spark: None, tmp_path: Path) -> None:
    result = runner.invoke(app, ["replicate", "--captured", str(tmp_path), "--format", "open", "-o", "colour=red"])
    assert result.exit_code == 2, result.output
    assert "open: unknown option colour; valid options:" in plain(result.output)


def test_an_unreachable_broker_is_one_line(no_spark: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cdclake.sources.kafka, "_METADATA_TIMEOUT_S", 0.5)
    result = runner.invoke(app, ["replicate", "-b", "127.0.0.1:1", "-t", "orders", "--format", "open", "--once"])
    assert result.exit_code == 1
    assert plain(result.output) == (
        "error: Kafka at 127.0.0.1:1 did not list the partitions of 'orders': Failed to get metadata: Local: Broker "
        "transport failure"
    )


def test_a_topic_that_is_not_there_is_an_error(no_spark: None, kafka: Kafka) -> None:
    kafka.create_topic("present", 1)
    for selection, said in ((["-t", "present", "-t", "absent"], "has no topic 'absent'"),
                            (["--topic-pattern", "abs.*"], "matches 'abs.*'")):
        result = runner.invoke(app, ["replicate", "-b", kafka.bootstrap, *selection, "--format", "open", "--once"])
        assert result.exit_code == 1, result.output
        assert said in plain(result.output)


def test_the_demo_refuses_a_directory_of_someone_elses(no_spark: None, tmp_path: Path) -> None:
    (tmp_path / "precious.txt").write_text("keep me")
    result = runner.invoke(app, ["demo", "--dir", str(tmp_path)])
    assert result.exit_code == 2
    assert "holds files of its own, not an earlier demo's" in plain(result.output)
    assert (tmp_path / "precious.txt").read_text() == "keep me"


def test_the_summary_counts_batches_records_changes_dead_letters_and_tables() -> None:
    reports = [BatchReport(1, records=1200, changes_applied=950, dead_letters=2, resolved_ts=77,
                           tables={"shop.orders": 3, "shop.items": 1}),
               BatchReport(2, records=1, changes_applied=1, resolved_ts=99, tables={"shop.orders": 1})]
    assert run_summary(reports, 12.34) == (
        "replicated 2 batches: 1201 records read, 951 changes applied, 2 dead letters, 2 tables in 12.3 s "
        "(97 records/s); resolved ts 99"
    )
    one = BatchReport(1, records=1, changes_applied=1, dead_letters=1, tables={"shop.orders": 1})
    assert run_summary([one], 0.0) == (
        "replicated 1 batch: 1 record read, 1 change applied, 1 dead letter, 1 table in 0.0 s (0 records/s)"
    )


def test_the_progress_line_says_the_phase_the_records_read_and_the_tables_written() -> None:
    reading = BatchProgress(7, "reading", records=5000, records_read=1200, changes_decoded=950)
    assert progress_line(reading) == "batch 7: reading, 1200 of 5000 records read, 950 changes decoded"
    applying = BatchProgress(7, "applying", 5000, 5000, 4100, tables=10, tables_done=3, last_table="shop.orders")
    assert progress_line(applying) == (
        "batch 7: applying, 5000 of 5000 records read, 4100 changes decoded, 3 of 10 tables written "
        "(last: shop.orders)")
    nothing = BatchProgress(7, "applying", 2, 2, 0)
    assert progress_line(nothing) == "batch 7: applying, 2 of 2 records read, 0 changes decoded"
    committing = BatchProgress(7, "committing", 1, 1, 1, tables=1, tables_done=1, last_table="shop.items")
    assert progress_line(committing) == (
        "batch 7: committing, 1 of 1 record read, 1 change decoded, 1 of 1 table written (last: shop.items)")


class _TwoBatches:
    """A Replicator without Spark: two batches, each moving on while it runs and shown by the live
    display as it ends."""

    def __init__(self, *args: Any, on_progress: Callable[[BatchProgress], None]) -> None:
        self.on_progress = on_progress

    def run(self, on_batch: Callable[[BatchReport], None], **kwargs: Any) -> list[BatchReport]:
        reports = [BatchReport(1, records=4, changes_applied=4, resolved_ts=10, tables={"shop.orders": 4}),
                   BatchReport(2, records=2, changes_applied=1, dead_letters=1, resolved_ts=20,
                               tables={"shop.items": 1})]
        for report in reports:
            self.on_progress(BatchProgress(report.batch, "applying", report.records, report.records, 4, 1, 0))
            on_batch(report)
        return reports


def test_replicate_prints_its_summary_on_stdout_on_a_line_of_its_own(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Off a terminal (as under the runner) the live display's last table is printed once at the end;
    with stdout and stderr in one stream the summary still starts a line."""
    monkeypatch.setattr(cdclake.cli_replicate, "build_session", lambda *args, **kwargs: SimpleNamespace(
        stop=lambda: None))
    monkeypatch.setattr(cdclake.cli_replicate, "Replicator", _TwoBatches)
    result = runner.invoke(app, ["replicate", "--captured", str(tmp_path), "--format", "open", "--once",
                                 "--verbose"])
    assert result.exit_code == DEAD_LETTERS_EXIT, result.output  # the second batch put a message there
    summary = "replicated 2 batches: 6 records read, 5 changes applied, 1 dead letter, 2 tables in"
    assert result.stdout.startswith(summary)
    assert result.stdout.count("\n") == 1
    assert "shop.items" in result.stderr and "shop.orders" not in result.stderr  # the last batch's table
    assert "\n" + result.stdout in result.output


@pytest.mark.parametrize(("url", "said"), [
    ("jdbc:oracle:thin:@db:1521/mirror", "no sink takes this URL"),
    ("jdbc:mysql:db/mirror?password=secret", "a MariaDB or MySQL sink is jdbc:mariadb://HOST:PORT/DATABASE"),
    ("jdbc:postgresql:mirror", "a PostgreSQL sink is jdbc:postgresql://HOST:PORT/DATABASE"),
    ("jdbc:postgresql://db:port/mirror?password=secret", "the port is not a number"),
])
def test_a_sink_url_no_sink_takes_is_a_usage_error(no_spark: None, tmp_path: Path, url: str, said: str) -> None:
    result = runner.invoke(app, ["replicate", "--captured", str(tmp_path), "--format", "open", "--sink", url])
    assert result.exit_code == 2, result.output
    assert said in plain(result.output)
    assert "secret" not in result.output


def test_unsupported_ddl_reaches_the_job_and_a_wrong_value_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    seen: list[Any] = []

    class Recording(_TwoBatches):
        def __init__(self, spark: Any, source: Any, config: Any, on_progress: Callable[[BatchProgress], None]
                     ) -> None:
            super().__init__(on_progress=on_progress)
            seen.append(config)

    monkeypatch.setattr(cdclake.cli_replicate, "build_session", lambda *args, **kwargs: SimpleNamespace(
        stop=lambda: None))
    monkeypatch.setattr(cdclake.cli_replicate, "Replicator", Recording)
    command = ["replicate", "--captured", str(tmp_path), "--format", "open", "--once", "--verbose"]
    result = runner.invoke(app, [*command, "--unsupported-ddl", "apply-supported"])
    assert result.exit_code == DEAD_LETTERS_EXIT, result.output
    assert [config.evolution.unsupported_ddl for config in seen] == ["apply-supported"]
    result = runner.invoke(app, [*command, "--unsupported-ddl", "ignore"])
    assert result.exit_code == 2 and "unsupported-ddl must be one of stop, skip, apply-supported" in plain(
        result.output)
    assert len(seen) == 1
