"""Where replicated tables live: the :class:`~cdclake.sinks.base.Sink` protocol the pipeline writes
through (:mod:`cdclake.sinks.base`, with what a sink must guarantee for exactly once), and one package
per kind of store: :mod:`cdclake.sinks.iceberg` (the default: Iceberg tables of a Spark catalog) and
:mod:`cdclake.sinks.postgres`.

A sink other than Iceberg is named by a URL; :data:`SINKS` maps each URL prefix to the function that
opens it. Adding a sink is its package and one line here.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING, cast

from cdclake.errors import OptionError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from cdclake.sinks.base import Sink

# URL prefix -> the package of the sink it names, which has check_url(url) (raising OptionError) and
# open_sink(spark, url, namespace), returning the Sink with its own tables made.
SINKS = {
    "jdbc:postgresql:": "cdclake.sinks.postgres",
}


def check_url(url: str) -> None:
    """Refuse, before anything runs, a sink URL no sink takes or its sink finds malformed."""
    _package(url).check_url(url)


def open_sink(spark: SparkSession, url: str, namespace: str) -> Sink:
    """The sink ``url`` names, its own tables made (the job's tables in ``namespace``)."""
    return cast("Sink", _package(url).open_sink(spark, url, namespace))


def _package(url: str) -> ModuleType:
    for prefix, package in SINKS.items():
        if url.startswith(prefix):
            return importlib.import_module(package)
    shown = url.split("?", 1)[0]
    raise OptionError(f"sink {shown!r}: no sink takes this URL; sinks: {', '.join(p + '//...' for p in SINKS)} "
                      "(without a sink URL, Iceberg tables of the Spark catalog)")
