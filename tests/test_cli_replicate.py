"""The replication commands fail fast and say one thing, before Spark starts: a wrong format, an
unreachable broker, a missing topic; and the demo never deletes a directory that is not its own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import cdclake.cli_replicate
import cdclake.sources.kafka
from cdclake.cli import app
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
