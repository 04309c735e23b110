"""``cdclake status`` without Spark: the report's shape, TSOs as times, the catalogs pyiceberg reads and
those it does not (Spark then, said so), on a JDBC catalog in SQLite that pyiceberg itself writes here
(tests/spark/test_status.py reads warehouses a real job wrote)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from typer.testing import CliRunner

from cdclake.cli import app
from cdclake.model import ColumnSchema, TableSchema
from cdclake.sinks.iceberg.reader import NotReadable, catalog_kind, sqlalchemy_url
from cdclake.spark.progress import STATE_FIELDS, STATE_NAMES, JobState, Position, TableState, small_rows
from cdclake.status import job_status, tso_time
from cdclake.types import MySQLType

_ARROW_TYPES = {"string": pa.string(), "int": pa.int32(), "bigint": pa.int64(), "binary": pa.binary()}
# 2024-05-01 09:00:03.225 UTC, logical counter 22.
TSO = (1714554003225 << 18) + 22


def test_a_tso_is_shown_as_its_physical_time_in_utc() -> None:
    assert tso_time(TSO) == "2024-05-01T09:00:03.225000+00:00"
    assert tso_time(None) is None


def _state() -> JobState:
    schema = TableSchema("shop", "orders", (ColumnSchema("id", MySQLType.parse("bigint")),))
    return JobState(batch=7, positions={("cdc", 0): Position(40, TSO, end=45), ("cdc", 1): Position(12)},
                    tables={("shop", "orders"): TableState(schema, "`lake`.`shop`.`orders`", TSO)})


def test_the_report_has_the_documented_shape() -> None:
    report = job_status(_state(), lambda target: {"rows": 3, "last_commit": None}, "test")
    assert report == {
        "batch": 7, "read_with": "test",
        "tables": [{"upstream": "shop.orders", "kind": "mirror", "lake_table": "`lake`.`shop`.`orders`", "rows": 3,
                    "last_commit": None, "applied_ts": TSO, "applied_time": "2024-05-01T09:00:03.225000+00:00"}],
        "partitions": [
            {"topic": "cdc", "partition": 0, "offset": 40, "watermark": TSO,
             "watermark_time": "2024-05-01T09:00:03.225000+00:00", "end_offset": 45, "lag_at_last_batch": 5,
             "lag_now": None},
            # Kept by a job before the state held the partition's end: no lag without the source.
            {"topic": "cdc", "partition": 1, "offset": 12, "watermark": None, "watermark_time": None,
             "end_offset": None, "lag_at_last_batch": None, "lag_now": None},
        ]}


def test_a_history_table_follows_its_mirror_in_the_report_and_is_kept_in_the_state() -> None:
    state = _state()
    state.histories[("shop", "orders")] = "`lake`.`shop`.`orders_history`"
    report = job_status(state, lambda target: {"rows": len(target), "last_commit": None}, "test")
    assert [(t["kind"], t["lake_table"], t["rows"], t["applied_ts"]) for t in report["tables"]] == [
        ("mirror", "`lake`.`shop`.`orders`", 22, TSO), ("history", "`lake`.`shop`.`orders_history`", 30, TSO)]
    from cdclake.spark.progress import state_from_rows

    rows = [dict(zip(STATE_NAMES, row, strict=True)) for row in small_rows(state, 7)]
    assert state_from_rows(rows).histories == state.histories


def test_the_state_keeps_each_partitions_end_for_the_lag() -> None:
    rows = [dict(zip(STATE_NAMES, row, strict=True)) for row in small_rows(_state(), 7)]
    from cdclake.spark.progress import state_from_rows

    assert state_from_rows(rows).positions[("cdc", 0)].end == 45


@pytest.mark.parametrize(("properties", "kind"), [
    ({}, "hadoop"), ({"type": "REST"}, "rest"), ({"type": "jdbc"}, "jdbc"), ({"type": "hive"}, "hive"),
    ({"catalog-impl": "org.apache.iceberg.rest.RESTCatalog"}, "rest"),
    ({"catalog-impl": "org.apache.iceberg.aws.glue.GlueCatalog"}, "org.apache.iceberg.aws.glue.GlueCatalog"),
])
def test_the_kind_of_catalog_is_read_from_its_spark_settings(properties: dict[str, str], kind: str) -> None:
    assert catalog_kind(properties) == kind


@pytest.mark.parametrize(("properties", "url"), [
    ({"uri": "jdbc:postgresql://db:5432/lake", "jdbc.user": "cdc lake", "jdbc.password": "p@ss"},
     "postgresql+psycopg://cdc%20lake:p%40ss@db:5432/lake"),
    ({"uri": "jdbc:postgresql://db/lake?user=u&password=p&sslmode=require"},
     "postgresql+psycopg://u:p@db/lake?sslmode=require"),
    ({"uri": "jdbc:sqlite:/data/catalog.db"}, "sqlite:////data/catalog.db"),
    ({"uri": "jdbc:sqlite:file:/data/catalog.db"}, "sqlite:////data/catalog.db"),
])
def test_a_jdbc_catalogs_uri_becomes_sqlalchemys(properties: dict[str, str], url: str) -> None:
    assert sqlalchemy_url("lake", properties) == url


def test_a_jdbc_catalog_on_another_database_is_not_read_by_pyiceberg() -> None:
    with pytest.raises(NotReadable, match="a JDBC catalog at 'jdbc:mysql://db/lake'; pyiceberg reads one on "
                                          "PostgreSQL or SQLite"):
        sqlalchemy_url("lake", {"uri": "jdbc:mysql://db/lake?password=secret"})


# --- a lake pyiceberg wrote, in a JDBC catalog on SQLite --------------------------------------------


def _lake(tmp_path: Path) -> Path:
    """A JDBC catalog in SQLite holding a job's state (:func:`_state`) and its mirror of three rows, two
    appended and one more after; the job file that names it."""
    from pyiceberg.catalog.sql import SqlCatalog

    database = tmp_path / "catalog.db"
    catalog = SqlCatalog("lake", uri=f"sqlite:///{database}", warehouse=(tmp_path / "files").as_uri())
    catalog.create_namespace("cdclake")
    catalog.create_namespace("shop")
    state_schema = pa.schema([(name, _ARROW_TYPES[kind]) for name, kind in STATE_FIELDS])
    state = catalog.create_table("cdclake.state", state_schema)
    state.append(pa.Table.from_pylist([dict(zip(STATE_NAMES, row, strict=True)) for row in small_rows(_state(), 7)],
                                      state_schema))
    orders = catalog.create_table("shop.orders", pa.schema([("id", pa.int64())]))
    orders.append(pa.table({"id": pa.array([1, 2], pa.int64())}))
    orders.append(pa.table({"id": pa.array([3], pa.int64())}))
    job = tmp_path / "job.toml"
    job.write_text(f'[lake]\nwarehouse = "{tmp_path / "files"}"\n[lake.spark]\n'
                   f'"spark.sql.catalog.lake.type" = "jdbc"\n"spark.sql.catalog.lake.uri" = "jdbc:sqlite:{database}"\n')
    return job


def _no_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    def session(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("status started Spark")

    monkeypatch.setattr("cdclake.cli_replicate.build_session", session)


def test_status_reads_a_jdbc_catalog_with_pyiceberg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _no_spark(monkeypatch)
    result = CliRunner().invoke(app, ["status", "--config", str(_lake(tmp_path)), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["read_with"] == "pyiceberg"
    assert report["batch"] == 7
    (orders,) = report["tables"]
    assert (orders["upstream"], orders["rows"], orders["applied_ts"]) == ("shop.orders", 3, TSO)
    assert orders["last_commit"].endswith("+00:00")
    assert [p["lag_at_last_batch"] for p in report["partitions"]] == [5, None]


def test_status_in_80_columns_cuts_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _no_spark(monkeypatch)
    result = CliRunner().invoke(app, ["status", "--config", str(_lake(tmp_path))],
                                env={"COLUMNS": "80", "TERMINAL_WIDTH": "80"})
    assert result.exit_code == 0, result.output
    assert max(map(len, result.stdout.splitlines())) <= 80
    assert "…" not in result.stdout
    for shown in (str(TSO), "2024-05-01", "09:00:03.225", "shop.orders", "lag at last batch"):
        assert shown in result.stdout


def test_status_where_no_job_wrote_is_an_error_that_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _no_spark(monkeypatch)
    result = CliRunner().invoke(app, ["status", "--warehouse", str(tmp_path), "--json"])
    assert result.exit_code == 1
    assert "has no job state (cdclake.state): no job has replicated with the namespace 'cdclake' there yet" in \
        " ".join(result.stderr.split())


class _SessionAsked(Exception):
    """Raised in place of starting Spark."""


def test_a_catalog_pyiceberg_does_not_read_is_read_through_spark_saying_so(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    def session(*args: Any, **kwargs: Any) -> None:
        raise _SessionAsked

    monkeypatch.setattr("cdclake.cli_replicate.build_session", session)
    job = tmp_path / "job.toml"
    job.write_text('[lake.spark]\n"spark.sql.catalog.lake.type" = "hive"\n')
    result = CliRunner().invoke(app, ["status", "--config", str(job)])
    assert isinstance(result.exception, _SessionAsked), result.output
    assert "catalog 'lake' is a hive catalog, which pyiceberg does not read here" in " ".join(result.stderr.split())
    assert "reading through Spark" in result.stderr
