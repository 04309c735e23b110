"""The daemon a local session's Python workers are forked from (``spark.python.daemon.module``):
PySpark's own, started without the copies of PySpark Spark puts first on the workers' path.

Spark starts its Python daemon with ``$SPARK_HOME/python/lib/pyspark.zip``, Py4J's zip and its core jar
first on ``PYTHONPATH``. Each of them, and each package PySpark imports from the zip, leaves a zip importer
behind, and each Python task's set-up calls ``importlib.invalidate_caches()``, which before Python 3.13
makes every zip importer read its archive's whole directory again: about 150 ms of CPU per Python task,
more than a small batch's decoding (BENCHMARKS.md, "Fixed cost"). Where Spark's home is an installed
PySpark (pip's) and Py4J is installed too, the zips are copies of what is installed and the jar holds no
Python: the daemon starts without them. Elsewhere (a Spark distribution beside no installed PySpark) the
path is left as Spark made it.

Run as a module by Spark, with the worker module's name as its argument; it imports nothing of Spark's
before the path is set.
"""

from __future__ import annotations

import os
import runpy
import sys


def without_copies(path: list[str]) -> list[str]:
    """``path`` without its entries inside an installed PySpark's directory (Spark's zips and jars there),
    where PySpark and Py4J are installed in its directories; else ``path`` itself."""
    home = _installed("pyspark", path)
    if home is None or _installed("py4j", path) is None:
        return path
    return [entry for entry in path if not os.path.realpath(entry).startswith(home + os.sep)]


def _installed(package: str, path: list[str]) -> str | None:
    """The directory of ``package`` installed in one of ``path``'s directories, if any."""
    for entry in path:
        directory = os.path.join(entry or os.curdir, package)
        if os.path.isfile(os.path.join(directory, "__init__.py")):
            return os.path.realpath(directory)
    return None


if __name__ == "__main__":
    kept = without_copies(sys.path)
    for dropped in set(sys.path) - set(kept):
        # Finding this module made an importer for each of them already: it too would be invalidated.
        sys.path_importer_cache.pop(dropped, None)
    sys.path[:] = kept
    runpy.run_module("pyspark.daemon", run_name="__main__", alter_sys=True)
