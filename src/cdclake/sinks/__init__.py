"""Where replicated tables live: the :class:`~cdclake.sinks.base.Sink` protocol the pipeline writes
through (:mod:`cdclake.sinks.base`, with what a sink must guarantee for exactly once), and one package
per kind of store: :mod:`cdclake.sinks.iceberg` (the default: Iceberg tables of a Spark catalog) and
:mod:`cdclake.sinks.postgres`, :mod:`cdclake.sinks.mariadb` (MariaDB and MySQL).

A sink other than Iceberg is named by a URL; :data:`SINKS` maps each URL prefix to the function that
opens it. Adding a sink is its package and one line here.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

from cdclake.errors import OptionError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from cdclake.sinks.base import Sink, StatusReader, TableComparison

# URL prefix -> the package of the sink it names, which has check_url(url) (raising OptionError),
# open_sink(spark, url, namespace), returning the Sink (its own tables made), open_reader(url, namespace),
# returning a StatusReader, and compare_tables (below). Its Sink is a HistorySink too.
SINKS = {
    "jdbc:postgresql:": "cdclake.sinks.postgres",
    "jdbc:mariadb:": "cdclake.sinks.mariadb",
    "jdbc:mysql:": "cdclake.sinks.mariadb",
}


def check_url(url: str) -> None:
    """Refuse, before anything runs, a sink URL no sink takes or its sink finds malformed."""
    _package(url).check_url(url)


def open_sink(spark: SparkSession, url: str, namespace: str) -> Sink:
    """The sink ``url`` names (the job's tables in ``namespace``), its own tables made."""
    return cast("Sink", _package(url).open_sink(spark, url, namespace))


def open_reader(url: str, namespace: str) -> StatusReader:
    """What ``cdclake status`` reads of the job in ``namespace`` of the sink ``url`` names, without Spark
    and changing nothing."""
    return cast("StatusReader", _package(url).open_reader(url, namespace))


def compare_tables(url: str, tables: Mapping[tuple[str, str], Any],
                   place: Callable[[str, str], tuple[str, str]]) -> list[TableComparison]:
    """Every upstream table (``tables``: (database, table) -> an object with ``schema`` and ``rows``) against
    the sink's table ``place(database, table)`` names (namespace, table): the demo's check."""
    return cast("list[TableComparison]", _package(url).compare_tables(url, tables, place))


def _package(url: str) -> ModuleType:
    for prefix, package in SINKS.items():
        if url.startswith(prefix):
            return importlib.import_module(package)
    shown = url.split("?", 1)[0]
    raise OptionError(f"sink {shown!r}: no sink takes this URL; sinks: {', '.join(p + '//...' for p in SINKS)} "
                      "(without a sink URL, Iceberg tables of the Spark catalog)")
