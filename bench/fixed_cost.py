"""What a small batch costs: each batch of about a thousand changes over ten tables, end to end.

Issue 20's fixed-cost target: a batch of 1,000 changes over 10 tables, with a DDL, applied in at most
5 s from loading the state to the committed state. The workload is the simulator's (bench/_stream.py:
ten tables, transactions of 1 to 9 rows, DDL mid-stream) in Canal-JSON with the TiDB extension on eight
partitions; one Spark session (``local[2]``). First the first messages of each partition are replicated
into a scratch namespace (not timed: JVM class loading and code generation), then the whole stream from
the start in batches of ``--max-batch-records`` records (``Replicator.step``, each batch timed from its
state load to its state commit). Per batch: wall seconds, the CPU seconds of this process and its
children (the JVM, Python workers: what the batch costs whatever else runs on the machine), and the Spark
jobs it ran. Run from the repository root::

    python3 bench/fixed_cost.py             # prints and writes BENCHMARKS.md
    python3 bench/fixed_cost.py --no-write
    python3 bench/fixed_cost.py --side-by-side spark.sql.codegen.wholeStage=false

``--side-by-side KEY=VALUE`` (repeatable) compares Spark settings instead, on a machine whose speed moves
between runs: the stream is replicated twice in one session, into two namespaces, the two replicators'
steps interleaved (A first, then B first, and so on), B's steps with the settings (a small batch's own,
``SMALL_BATCH_SETTINGS``, still win inside it); it prints both replicators' batches and writes nothing.

A benchmark, not a test: nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import shutil
import statistics
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from _stream import OPTIONS as FORMAT_OPTIONS
from _stream import Prefix, cache_root, prepared_stream
from benchmarks_md import command_line, load_average, machine, publish, tree_cpu_seconds

from cdclake.spark.replicate import ReplicateConfig, Replicator
from cdclake.spark.session import build_session, new_log_file, session_settings

ROOT = Path(__file__).resolve().parents[1]
SECTION_START = "<!-- bench/fixed_cost.py: start -->"
SECTION_END = "<!-- bench/fixed_cost.py: end -->"
TARGET_S = 5.0
OPTIONS = FORMAT_OPTIONS["canal-json"]


def _config(name: str, max_batch_records: int) -> ReplicateConfig:
    """A job of its own namespaces, ``name``'s."""
    return ReplicateConfig("canal-json", OPTIONS, namespace=f"{name}_cdclake", target_namespace=f"{name}_{{database}}",
                           max_batch_records=max_batch_records)


@contextlib.contextmanager
def _scratch_session() -> Iterator[Any]:
    """A session over a warehouse of its own, stopped and deleted after."""
    warehouse = Path(tempfile.mkdtemp(prefix="cdclake-fixed-"))
    spark = build_session(warehouse=warehouse, log_file=new_log_file())
    try:
        yield spark
    finally:
        spark.stop()
        shutil.rmtree(warehouse, ignore_errors=True)


def run(events: int, max_batch_records: int) -> tuple[list[dict[str, Any]], str]:
    stream = prepared_stream("canal-json", events, cache_root())
    with _scratch_session() as spark:
        tracker = spark.sparkContext.statusTracker()

        def newest_job() -> int:
            return max(tracker.getJobIdsForGroup(None) or [0])

        Replicator(spark, Prefix(stream.source, 300), _config("warm", max_batch_records)).run(once=True)
        replicator = Replicator(spark, stream.source, _config("run", max_batch_records))
        batches = []
        while True:
            jobs, cpu = newest_job(), tree_cpu_seconds()
            report = replicator.step(finishing=True)
            if report is None:
                break
            batches.append({"batch": report.batch, "records": report.records, "changes": report.changes_applied,
                            "tables": len(report.tables), "writes": report.writes, "seconds": report.seconds,
                            "cpu": tree_cpu_seconds() - cpu, "jobs": newest_job() - jobs})
    workload = (f"`{stream.spec}` as `canal-json` {OPTIONS}: {stream.messages:,} messages on eight partitions")
    return batches, workload


def side_by_side(events: int, max_batch_records: int, settings: dict[str, str]) -> None:
    """Batches of one replicator as the session is (A) and one with ``settings`` (B), steps interleaved."""
    stream = prepared_stream("canal-json", events, cache_root())
    variants = {"A": {}, "B": settings}
    with _scratch_session() as spark:
        for name, variant in variants.items():
            with session_settings(spark, variant):
                Replicator(spark, Prefix(stream.source, 300), _config(f"warm_{name}", max_batch_records)).run(once=True)
        replicators = {name: Replicator(spark, stream.source, _config(f"run_{name}", max_batch_records))
                       for name in variants}
        timed: dict[str, list[tuple[float, float]]] = {name: [] for name in variants}
        order, finished = list(variants), False
        while not finished:
            for name in order:
                with session_settings(spark, variants[name]):
                    cpu = tree_cpu_seconds()
                    report = replicators[name].step(finishing=True)
                if report is None:
                    finished = True
                    break
                timed[name].append((report.seconds, tree_cpu_seconds() - cpu))
            order.reverse()
    for name, batches in timed.items():
        print(f"{name} {variants[name] or '(the session as it is)'}: batches {[round(s, 1) for s, _ in batches]} s, "
              f"median {statistics.median(s for s, _ in batches):.2f} s, all {sum(s for s, _ in batches):.1f} s, "
              f"median CPU {statistics.median(c for _, c in batches):.2f} s")


def section(command: str, batches: list[dict[str, Any]], workload: str, loads: tuple[str, str]) -> str:
    rows = "\n".join(f"| {b['batch']} | {b['records']:,} | {b['changes']:,} | {b['tables']} | {b['writes']} | "
                     f"{b['seconds']:.1f} | "
                     f"{b['cpu']:.1f} | {b['jobs']} |" for b in batches)
    median = statistics.median(b["seconds"] for b in batches)
    verdict = "met" if median <= TARGET_S else "**not met**"
    heading = "  \n".join([
        f"Command: `{command}`",
        f"Date: {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC",
        f"Machine: {machine()}; Spark `local[2]`; load average {loads[0]} (1 min) at the start, {loads[1]} at the end",
        f"Workload: {workload}. Each batch timed from its state load to its state commit (`Replicator.step`), after "
        "an untimed warm-up; CPU seconds are this process's and its children's (the JVM, Python workers)."])
    return f"""{SECTION_START}
## Fixed cost: batches of about a thousand changes over ten tables

{heading}

| batch | records | changes applied | tables | writes | s | CPU s | Spark jobs |
| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
{rows}

Median batch {median:.1f} s, target ≤ {TARGET_S:g} s: {verdict}.
{SECTION_END}"""


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=6000, help="row events of the stream, about (default 6000)")
    parser.add_argument("--max-batch-records", type=int, default=1100, help="records per batch (default 1100)")
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--side-by-side", action="append", default=[], metavar="KEY=VALUE",
                        help="compare the session with these Spark settings, steps interleaved (repeatable)")
    args = parser.parse_args(argv)
    if args.side_by_side:
        side_by_side(args.events, args.max_batch_records, dict(s.split("=", 1) for s in args.side_by_side))
        return
    start_load = load_average()
    batches, workload = run(args.events, args.max_batch_records)
    text = section(command_line("fixed_cost.py", argv), batches, workload, (start_load, load_average()))
    publish(text, ROOT / "BENCHMARKS.md", SECTION_START, SECTION_END, not args.no_write)


if __name__ == "__main__":
    main()
