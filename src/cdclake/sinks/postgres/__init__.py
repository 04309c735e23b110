"""PostgreSQL tables as a sink: :class:`~cdclake.sinks.postgres.sink.PostgresSink`, one transaction per
batch (:mod:`.sink`), the statements it runs (:mod:`.statements`), MySQL types as PostgreSQL's
(:mod:`.types`), its URL (:mod:`.connection`), and its job read for ``cdclake status`` (:mod:`.reader`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from cdclake.sinks.postgres.connection import parse
from cdclake.sinks.postgres.statements import table_name

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from cdclake.sinks.base import TableComparison
    from cdclake.sinks.postgres.reader import PostgresReader
    from cdclake.sinks.postgres.sink import PostgresSink



def check_url(url: str) -> None:
    parse(url)


def open_sink(spark: SparkSession, url: str, namespace: str) -> PostgresSink:
    from cdclake.sinks.postgres.sink import PostgresSink

    sink = PostgresSink(spark, parse(url), namespace)
    sink.prepare()
    return sink


def open_reader(url: str, namespace: str) -> PostgresReader:
    from cdclake.sinks.postgres.reader import PostgresReader

    return PostgresReader(parse(url), namespace)


def compare_tables(url: str, tables: Mapping[tuple[str, str], Any],
                   place: Callable[[str, str], tuple[str, str]]) -> list[TableComparison]:
    from cdclake.sinks.postgres import verify

    return verify.compare_tables(parse(url), tables, lambda database, table: table_name(*place(database, table)))
