"""``cdclake status``: what a replication job has applied and how far behind it is, read in seconds.

The job's state and its tables' snapshots are read without Spark where the catalog allows
(:mod:`cdclake.sinks.iceberg.reader`: pyiceberg on Hadoop, JDBC and REST catalogs; a database sink with
its own client); any other catalog, or ``--spark``, is read through a Spark session. The report's shape
(also ``--json``'s) is :mod:`cdclake.status`'s.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

import orjson
import typer
from rich.console import Console
from rich.table import Table

from cdclake.cli_replicate import (
    CatalogOption,
    ConfigOption,
    SinkOption,
    VerboseOption,
    WarehouseOption,
    cli_session,
)
from cdclake.errors import CdclakeError
from cdclake.jobconfig import job_settings, merged, read_toml
from cdclake.sources.ranges import Source

_console = Console(stderr=True, highlight=False)

NamespaceOption = Annotated[str | None, typer.Option("--namespace", metavar="NAME", help="The namespace of the "
                                                     "job's own tables (default: cdclake).")]


def status(
    config: ConfigOption = None,
    warehouse: WarehouseOption = None,
    catalog: CatalogOption = None,
    namespace: NamespaceOption = None,
    sink: SinkOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="The report as one JSON object on standard output "
                                          "(its fields: cdclake/status.py).")] = False,
    spark: Annotated[bool, typer.Option("--spark", help="Read the Iceberg tables through Spark (a minute to "
                                        "start), as for a catalog pyiceberg does not read.")] = False,
    verbose: VerboseOption = False,
) -> None:
    """Per table the rows, the resolved ts applied (a TSO and its time) and the last commit; per partition
    the offset reached and the lag, as of the job's last batch and, with a source in --config, now.

    Reads without Spark where it can: Iceberg's Hadoop (the default --warehouse), JDBC (PostgreSQL,
    SQLite) and REST catalogs with pyiceberg, a database sink (--sink) with its own client; any other
    catalog through Spark, saying so.
    """
    try:
        document = read_toml(config) if config is not None else {}
        sections = merged(document, {"lake": {"warehouse": warehouse, "catalog": catalog, "namespace": namespace},
                                     "sink": {"url": sink}})
        source = job_settings(sections).source if sections["source"] else None
    except CdclakeError as exc:
        raise typer.BadParameter(str(exc)) from exc
    try:
        found = _read(sections, source, spark, verbose)
    except CdclakeError as exc:
        _console.print(f"[bold red]error[/]: {exc}")
        raise typer.Exit(1) from None
    if as_json:
        typer.echo(orjson.dumps(found, option=orjson.OPT_INDENT_2).decode())
    else:
        _print_report(Console(highlight=False), found)


def _read(sections: dict[str, Any], source: Source | None, force_spark: bool, verbose: bool) -> dict[str, Any]:
    from cdclake.sinks import open_reader
    from cdclake.sinks.iceberg.reader import IcebergReader, NotReadable
    from cdclake.spark.session import iceberg_conf
    from cdclake.status import job_status

    lake = sections["lake"]
    catalog, namespace = lake.get("catalog", "lake"), lake.get("namespace", "cdclake")
    url = sections["sink"].get("url")
    if url is not None:
        reader = open_reader(url, namespace)
        return job_status(reader.read_state(), reader.table_status, reader.read_with, source)
    spark_conf = {name: str(value) for name, value in lake.get("spark", {}).items()}
    iceberg = None
    if not force_spark:
        try:
            iceberg = IcebergReader(catalog, namespace,
                                    {**iceberg_conf(catalog, lake.get("warehouse", "warehouse")), **spark_conf})
        except NotReadable as exc:
            _console.print(f"{exc}: reading through Spark")
    if iceberg is not None:
        return job_status(iceberg.read_state(), iceberg.table_status, iceberg.read_with, source)
    from cdclake.spark.status import status as spark_status

    session = cli_session(lake.get("master", "local[2]") or None, verbose, catalog=catalog,
                          warehouse=lake.get("warehouse", "warehouse"), conf=spark_conf,
                          extra_jars=lake.get("jars", ()))
    try:
        return spark_status(session, catalog, namespace, source)
    finally:
        session.stop()


def _print_report(console: Console, found: dict[str, Any]) -> None:
    """The report as two tables whose cells wrap, never cut: a TSO (18 digits) is never broken, a time
    breaks between its date and its time of day, so the tables fit an 80-column terminal."""
    console.print(f"batches committed: {found['batch']} (read with {found['read_with']})")
    tables = Table(title="Tables (times in UTC)")
    _columns(tables, ("upstream / lake table", 0), ("rows", 4), ("applied resolved ts", TSO_WIDTH),
             ("last commit", TIME_OF_DAY_WIDTH))
    for row in found["tables"]:
        history = " (history)" if row.get("kind") == "history" else ""
        tables.add_row(f"{row['upstream']}{history}\n{row['lake_table']}", str(row["rows"]),
                       _with_time(row["applied_ts"], row["applied_time"]), _time(row["last_commit"]))
    partitions = found["partitions"]
    live = any(row["lag_now"] is not None for row in partitions)
    lag_columns = [("lag at last batch", 5), *([("lag now", 5)] if live else [])]
    shown = Table(title="Partitions")
    _columns(shown, ("topic", 0), ("partition", 4), ("offset", 6), ("watermark", TSO_WIDTH), *lag_columns)
    for row in partitions:
        lags = [row["lag_at_last_batch"], *([row["lag_now"]] if live else [])]
        shown.add_row(row["topic"], str(row["partition"]), str(row["offset"]),
                      _with_time(row["watermark"], row["watermark_time"]),
                      *("?" if lag is None else str(lag) for lag in lags))
    console.print(tables)
    console.print(shown)


TSO_WIDTH = 18  # digits of a TSO until the year 2090 (10**18 >> 18 ms after 1970)
TIME_OF_DAY_WIDTH = len("10:55:01.123")


def _columns(table: Table, *columns: tuple[str, int]) -> None:
    """Columns (header, narrowest width) whose text wraps, and folds a word too long, never cutting it."""
    for header, narrowest in columns:
        table.add_column(header, overflow="fold", min_width=narrowest or None)


def _time(iso: str | None) -> str:
    """An ISO time in UTC as ``2026-11-26 10:55:01.123``; "-" for none."""
    if iso is None:
        return "-"
    moment = datetime.fromisoformat(iso)
    return f"{moment:%Y-%m-%d %H:%M:%S}.{moment.microsecond // 1000:03d}"


def _with_time(tso: int | None, iso: str | None) -> str:
    return "-" if tso is None else f"{tso}\n{_time(iso)}"
