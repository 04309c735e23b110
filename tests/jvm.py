"""The environment of a process a test starts that starts a JVM of its own for under a minute or two (a
``cdclake replicate`` run to its end or its kill, an example, the demo on separate executors).

Such a JVM spends much of its life compiling: HotSpot's C2 compiler optimises the hottest code for runs
longer than these, and on two cores its threads take CPU from the run itself. Stopping at C1 made the
batch example's test 23 % faster (42.9 s to 32.9 s); the tests' own Spark session keeps C2, since it lives
for the whole run and gains from it (six replications took 170 s with C2, 224 s with C1 only). The JVM
says on its stderr that it picked the option up; nothing else changes.

C1 alone gets HotSpot's code cache for one compiler, 48 MiB, and a run of many batches fills it with the
queries Spark generates: on 2026-11-27 the crash test's last run did ("CodeCache is full. Compiler has
been disabled."), then failed to link a method handle (``InternalError: no such method:
MethodHandle.linkToStatic``) in Spark's listener thread, which stopped the SparkContext. The cache is
given the tiered default, 240 MiB, back.
"""

from __future__ import annotations

from collections.abc import Mapping

from cdclake.spark.session import SHORT_LIVED_JAVA_OPTIONS

SHORT_LIVED_JVM = {"JAVA_TOOL_OPTIONS": SHORT_LIVED_JAVA_OPTIONS}


def short_lived_jvm(environment: Mapping[str, str]) -> dict[str, str]:
    """``environment`` for a process whose JVMs run briefly: compiled by C1 only."""
    return {**environment, **SHORT_LIVED_JVM}
