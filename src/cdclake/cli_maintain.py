"""``cdclake maintain``: a replication job's mirrors compacted and old snapshots expired now, through
Spark (:func:`cdclake.spark.maintain.maintain`), from the same job settings ``replicate`` and ``status``
take; one line per table compacted on standard output."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console

from cdclake.cli_replicate import CatalogOption, ConfigOption, VerboseOption, WarehouseOption, cli_session
from cdclake.cli_status import NamespaceOption
from cdclake.errors import CdclakeError
from cdclake.jobconfig import merged, read_toml
from cdclake.sinks.base import Compaction

_console = Console(stderr=True, highlight=False)


def maintain(
    config: ConfigOption = None,
    warehouse: WarehouseOption = None,
    catalog: CatalogOption = None,
    namespace: NamespaceOption = None,
    compact: Annotated[bool, typer.Option("--compact/--no-compact", help="Rewrite each mirror that holds "
                                          "delete files so it holds none.")] = True,
    expire: Annotated[bool, typer.Option("--expire/--no-expire", help="Expire old snapshots of every table "
                                         "of the job, as each table's history.expire.* properties say.")] = True,
    verbose: VerboseOption = False,
) -> None:
    """Compact the job's mirror tables and expire their old snapshots now, as replicate does on its own
    every compact-every-s and expire-snapshots-every-s seconds.

    A merge-on-read mirror gets delete files from each MERGE, which every reader merges into the rows:
    compaction applies them to the data files (Iceberg's rewrite_data_files) and drops them
    (rewrite_position_delete_files), leaving the rows as they were. Run it while the job is stopped: a
    compaction and a batch's MERGE committing at once can make one of them fail (a batch resumes on restart).
    """
    try:
        document = read_toml(config) if config is not None else {}
    except CdclakeError as exc:
        raise typer.BadParameter(str(exc)) from exc
    lake = merged(document, {"lake": {"warehouse": warehouse, "catalog": catalog, "namespace": namespace}})["lake"]
    from cdclake.spark.maintain import maintain as maintain_tables

    session = cli_session(lake.get("master", "local[2]") or None, verbose, catalog=lake.get("catalog", "lake"),
                          warehouse=lake.get("warehouse", "warehouse"),
                          conf={name: str(value) for name, value in lake.get("spark", {}).items()},
                          extra_jars=lake.get("jars", ()))
    try:
        compacted = maintain_tables(session, lake.get("catalog", "lake"), lake.get("namespace", "cdclake"),
                                    compact=compact, expire=expire)
    except CdclakeError as exc:
        _console.print(f"[bold red]error[/]: {exc}")
        raise typer.Exit(1) from None
    finally:
        session.stop()
    for done in compacted:
        typer.echo(_line(done))
    if compact and not compacted:
        typer.echo("no table held delete files")


def _line(done: Compaction) -> str:
    return (f"{done.table}: delete files {done.delete_files_before} -> {done.delete_files_after}, "
            f"data files rewritten {done.data_files_rewritten}, written {done.data_files_added}")
