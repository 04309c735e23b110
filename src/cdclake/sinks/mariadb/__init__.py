"""MariaDB (or MySQL) tables as a sink: :class:`~cdclake.sinks.mariadb.sink.MariaDBSink`, each write atomic
with its step (:mod:`.sink`), the statements it runs (:mod:`.statements`), MySQL types as MariaDB columns
(:mod:`.types`), bulk loading (:mod:`.loading`), its URL (:mod:`.connection`), and what ``cdclake status``
reads (:mod:`.reader`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from cdclake.sinks.mariadb.connection import parse
from cdclake.sinks.mariadb.statements import table_name

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from cdclake.sinks.base import TableComparison
    from cdclake.sinks.mariadb.reader import MariaDBReader
    from cdclake.sinks.mariadb.sink import MariaDBSink



def check_url(url: str) -> None:
    parse(url)


def open_sink(spark: SparkSession, url: str, namespace: str) -> MariaDBSink:
    from cdclake.sinks.mariadb.sink import MariaDBSink

    sink = MariaDBSink(spark, parse(url), namespace)
    sink.prepare()
    return sink


def open_reader(url: str, namespace: str) -> MariaDBReader:
    from cdclake.sinks.mariadb.reader import MariaDBReader

    return MariaDBReader(parse(url), namespace)


def compare_tables(url: str, tables: Mapping[tuple[str, str], Any],
                   place: Callable[[str, str], tuple[str, str]]) -> list[TableComparison]:
    from cdclake.sinks.mariadb import verify

    return verify.compare_tables(parse(url), tables, lambda database, table: table_name(*place(database, table)))
