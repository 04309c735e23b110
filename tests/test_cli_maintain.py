"""``cdclake maintain``: the job's settings reach the compaction, and what it did is one line a table."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from typer.testing import CliRunner

import cdclake.cli_maintain
import cdclake.spark.maintain
from cdclake.cli import app
from cdclake.sinks.base import Compaction


def test_maintain_reads_the_job_file_and_prints_each_table_compacted(monkeypatch: pytest.MonkeyPatch,
                                                                     tmp_path: Path) -> None:
    sessions: list[dict[str, Any]] = []
    calls: list[tuple[Any, ...]] = []

    def session(master: str | None, verbose: bool, **settings: Any) -> SimpleNamespace:
        sessions.append({"master": master, **settings})
        return SimpleNamespace(stop=lambda: None)

    def maintain(spark: Any, catalog: str, namespace: str, *, compact: bool, expire: bool) -> list[Compaction]:
        calls.append((catalog, namespace, compact, expire))
        return [Compaction("`lake`.`shop`.`orders`", 12, 0, 7, 1)]

    monkeypatch.setattr(cdclake.cli_maintain, "cli_session", session)
    monkeypatch.setattr(cdclake.spark.maintain, "maintain", maintain)
    job = tmp_path / "job.toml"
    job.write_text('[lake]\nwarehouse = "s3a://bucket/lake"\nnamespace = "jobs"\n', encoding="utf-8")

    result = CliRunner().invoke(app, ["maintain", "--config", str(job), "--catalog", "mine", "--no-expire"])

    assert result.exit_code == 0, result.output
    assert result.stdout == "`lake`.`shop`.`orders`: delete files 12 -> 0, data files rewritten 7, written 1\n"
    assert calls == [("mine", "jobs", True, False)]
    assert (sessions[0]["warehouse"], sessions[0]["catalog"]) == ("s3a://bucket/lake", "mine")
