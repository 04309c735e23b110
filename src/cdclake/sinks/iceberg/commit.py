"""Properties written into the snapshot summary of the Iceberg commit a SQL statement makes.

DataFrame writes take ``snapshot-property.<key>`` options, but MERGE, UPDATE and DELETE are SQL. For
those Iceberg offers ``CommitMetadata.withCommitProperties(properties, callable, exceptionClass)``, a
JVM call that sets thread-local properties while ``callable`` runs. We pass it a Python callable
through Py4J's callback server: the statement runs inside the callback, on the JVM thread that holds
the properties, so source offsets land in the same atomic commit as the rows they produced.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# PySpark's ensure_callback_server_started is not thread-safe: every thread that finds no callback server
# yet resets the JVM's callback client, and a reset shuts down the client that another thread's proxy call
# may be using ("Cannot obtain a new communication channel"). Tables applied side by side make their
# first commits at the same moment, so the first start is made by one thread while the others wait.
_CALLBACK_SERVER_START = threading.Lock()


class _JavaCallable:
    """A Python function seen by the JVM as a ``java.util.concurrent.Callable``."""

    def __init__(self, function: Callable[[], Any]) -> None:
        self.function = function
        self.error: BaseException | None = None

    def call(self) -> None:
        try:
            self.function()
        except BaseException as exc:  # re-raised on the Python side with its traceback intact
            self.error = exc
            raise

    class Java:
        implements: ClassVar[list[str]] = ["java.util.concurrent.Callable"]


def with_commit_properties(spark: SparkSession, properties: Mapping[str, str], statement: Callable[[], Any]) -> None:
    """Run ``statement`` (which issues one SQL write) so its Iceberg commit carries ``properties``."""
    from py4j.java_gateway import JavaClass
    from pyspark.java_gateway import ensure_callback_server_started

    gateway = spark.sparkContext._gateway
    assert gateway is not None
    with _CALLBACK_SERVER_START:
        ensure_callback_server_started(gateway)  # type: ignore[no-untyped-call]
    # Classes named whole: a dotted path through the JVM view (jvm.org.apache...) costs a round trip per
    # part, each a class lookup that misses and searches every jar on the class path.
    client = gateway._gateway_client
    java_properties = JavaClass("java.util.HashMap", client)()
    for key, value in properties.items():
        java_properties.put(key, value)
    callable_ = _JavaCallable(statement)
    exception_class = JavaClass("java.lang.Class", client).forName("java.lang.Exception")
    commit_metadata = JavaClass("org.apache.iceberg.spark.CommitMetadata", client)
    try:
        commit_metadata.withCommitProperties(java_properties, callable_, exception_class)
    except Exception:
        if callable_.error is not None:
            raise callable_.error from None
        raise
