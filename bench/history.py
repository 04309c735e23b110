"""What history tables cost: the same stream replicated into mirrors alone, and into mirrors with an SCD
type 2 history table beside each (``[tables] history = ["*"]``), in one Spark session.

Issue 21 asks for history tables' extra cost against mirrors alone. The workload is the simulator's
(bench/_stream.py: ten tables, DDL mid-stream) in Canal-JSON with the TiDB extension on eight partitions,
whose commit ts the history's versions start and end at. After an untimed warm-up of each kind (JVM class
loading, code generation), the whole stream is replicated from the start into fresh tables in batches of
``--max-batch-records`` records, by turns: mirrors alone, then with history, ``--rounds`` times, so that
the machine's drift falls on both alike. Per run: wall seconds of its batches (``Replicator.step``, from
the state load to the state commit), and the CPU seconds of this process and its children (the JVM, Python
workers). Run from the repository root::

    python3 bench/history.py             # prints and writes BENCHMARKS.md
    python3 bench/history.py --no-write

A benchmark, not a test: nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import datetime as dt
import shutil
import statistics
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from _stream import OPTIONS as FORMAT_OPTIONS
from _stream import CapturedStream, Prefix, cache_root, prepared_stream
from benchmarks_md import command_line, load_average, machine, publish, tree_cpu_seconds

from cdclake.schema.history import ALL_TABLES, HistorySettings
from cdclake.spark.replicate import ReplicateConfig, Replicator
from cdclake.spark.session import build_session, new_log_file

ROOT = Path(__file__).resolve().parents[1]
SECTION_START = "<!-- bench/history.py: start -->"
SECTION_END = "<!-- bench/history.py: end -->"
OPTIONS = FORMAT_OPTIONS["canal-json"]
KINDS = ("mirrors alone", "mirrors and history")


@dataclass(frozen=True)
class Run:
    kind: str
    batches: int
    changes: int
    seconds: float  # the batches' wall time
    cpu: float


def _config(name: str, kind: str, max_batch_records: int) -> ReplicateConfig:
    history = HistorySettings(tables=(ALL_TABLES,)) if kind == KINDS[1] else HistorySettings()
    return ReplicateConfig("canal-json", OPTIONS, namespace=f"{name}_cdclake", target_namespace=f"{name}_{{database}}",
                           max_batch_records=max_batch_records, history=history)


def _replicated(spark: object, stream: CapturedStream, name: str, kind: str, max_batch_records: int) -> Run:
    replicator = Replicator(spark, stream.source, _config(name, kind, max_batch_records))
    batches = changes = 0
    seconds, cpu = 0.0, tree_cpu_seconds()
    while (report := replicator.step(finishing=True)) is not None:
        batches, changes, seconds = batches + 1, changes + report.changes_applied, seconds + report.seconds
    return Run(kind, batches, changes, seconds, tree_cpu_seconds() - cpu)


def measure(stream: CapturedStream, max_batch_records: int, rounds: int) -> list[Run]:
    warehouse = Path(tempfile.mkdtemp(prefix="cdclake-history-"))
    spark = build_session(warehouse=warehouse, log_file=new_log_file())
    try:
        for number, kind in enumerate(KINDS):
            warm_up = Prefix(stream.source, 300)
            Replicator(spark, warm_up, _config(f"warm{number}", kind, max_batch_records)).run(once=True)
        runs = []
        for round_number in range(rounds):
            for number, kind in enumerate(KINDS):
                runs.append(_replicated(spark, stream, f"r{round_number}k{number}", kind, max_batch_records))
                print(runs[-1], flush=True)
        return runs
    finally:
        spark.stop()
        shutil.rmtree(warehouse, ignore_errors=True)


def section(command: str, stream: CapturedStream, runs: list[Run], max_batch_records: int,
            loads: tuple[str, str]) -> str:
    rows = "\n".join(f"| {number // len(KINDS) + 1} | {run.kind} | {run.batches} | {run.changes:,} | "
                     f"{run.seconds:.1f} | {run.cpu:.1f} |" for number, run in enumerate(runs))
    median = {kind: statistics.median(run.seconds for run in runs if run.kind == kind) for kind in KINDS}
    cpu = {kind: statistics.median(run.cpu for run in runs if run.kind == kind) for kind in KINDS}
    batches = runs[0].batches
    extra = median[KINDS[1]] - median[KINDS[0]]
    heading = "  \n".join([
        f"Command: `{command}`",
        f"Date: {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC",
        f"Machine: {machine()}; Spark `local[2]`; load average {loads[0]} (1 min) at the start, {loads[1]} at the end",
        f"Workload: `{stream.spec}` as `canal-json` {OPTIONS}: {stream.messages:,} messages on eight partitions, in "
        f"batches of at most {max_batch_records:,} records. Each run into fresh tables, after an untimed warm-up of "
        "each kind; seconds are the batches' wall time, CPU seconds this process's and its children's."])
    return f"""{SECTION_START}
## History tables: their extra cost against mirrors alone

{heading}

| round | tables | batches | changes applied | s | CPU s |
| ---: | --- | ---: | ---: | ---: | ---: |
{rows}

Median of the rounds: mirrors alone {median[KINDS[0]]:.1f} s ({cpu[KINDS[0]]:.1f} CPU s), with a history table
beside each mirror {median[KINDS[1]]:.1f} s ({cpu[KINDS[1]]:.1f} CPU s): **{median[KINDS[1]] / median[KINDS[0]]:.2f}×**,
{extra:+.1f} s in all, {extra / batches:+.1f} s a batch.
{SECTION_END}"""


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=60_000, help="row events of the stream, about (default 60000)")
    parser.add_argument("--max-batch-records", type=int, default=20_000, help="records per batch (default 20000)")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each kind, taken by turns (default 2)")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(argv)
    start_load = load_average()
    stream = prepared_stream("canal-json", args.events, cache_root())
    runs = measure(stream, args.max_batch_records, args.rounds)
    text = section(command_line("history.py", argv), stream, runs, args.max_batch_records, (start_load, load_average()))
    publish(text, ROOT / "BENCHMARKS.md", SECTION_START, SECTION_END, not args.no_write)


if __name__ == "__main__":
    main()
