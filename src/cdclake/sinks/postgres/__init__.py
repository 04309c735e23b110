"""PostgreSQL tables as a sink: :class:`~cdclake.sinks.postgres.sink.PostgresSink`, one transaction per
batch (:mod:`.sink`), the statements it runs (:mod:`.statements`), MySQL types as PostgreSQL's
(:mod:`.types`), and its URL (:mod:`.connection`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cdclake.sinks.postgres.connection import parse

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from cdclake.sinks.postgres.sink import PostgresSink


def check_url(url: str) -> None:
    parse(url)


def open_sink(spark: SparkSession, url: str, namespace: str) -> PostgresSink:
    from cdclake.sinks.postgres.sink import PostgresSink

    sink = PostgresSink(spark, parse(url), namespace)
    sink.prepare()
    return sink
