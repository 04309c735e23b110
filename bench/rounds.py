"""Warm rounds: cdclake and the hand-written job alternated in one Spark session, round after round.

bench/replicate.py times each of them once, cdclake first, after a warm-up of a few thousand messages: its
ratio is that of two runs in a JVM still warming up (classes loaded, the JIT compiling the hot loops of
Spark's generated code, Iceberg's writers, the Arrow path). This script runs the same two jobs over the
same captured stream again and again, cdclake then the hand-written job, each into fresh tables, so that
the table shows what a first full-size run pays and whether the ratio holds once both run warm. From
captured files only; the hand-written job is bench/handwritten.py, typed by the tables of cdclake's first
round. Run from the repository root::

    python3 bench/rounds.py --format simple --rounds 3

It prints a section and writes it to BENCHMARKS.md between the format's markers (``--no-write`` leaves
the file alone).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import tempfile
from collections.abc import Sequence
from pathlib import Path

import handwritten  # bench/ is on the path when a script here runs
from _stream import PARTITIONS, Prefix, cache_root, prepared_stream
from benchmarks_md import command_line, load_average, machine, publish
from replicate import CATALOG, MASTER, WARM_UP_MESSAGES, replicate_once, run_handwritten

from cdclake.spark.replicate import ReplicateConfig
from cdclake.spark.session import build_session

ROOT = Path(__file__).resolve().parent.parent


def markers(format_name: str) -> tuple[str, str]:
    return f"<!-- bench/rounds.py {format_name}: start -->", f"<!-- bench/rounds.py {format_name}: end -->"


def measure(format_name: str, events: int, rounds: int, cache: Path) -> tuple[list[tuple[float, float]], str]:
    """(cdclake's seconds, the hand-written job's seconds) per round, and the stream's description."""
    stream = prepared_stream(format_name, events, cache)
    batch = ReplicateConfig(format_name).max_batch_records
    measured = []
    with tempfile.TemporaryDirectory(prefix="cdclake-bench-") as scratch:
        spark = build_session(MASTER, warehouse=Path(scratch) / "warehouse",
                              conf={"spark.ui.showConsoleProgress": "false"})
        spark.sparkContext.setLogLevel("ERROR")
        try:
            replicate_once(spark, stream, "warmup", batch, Prefix(stream.source, WARM_UP_MESSAGES))
            first = None
            for number in range(1, rounds + 1):
                run = replicate_once(spark, stream, f"round{number}", batch)
                first = first or run
                messages = handwritten.captured_messages(spark, stream.root, stream.topic)
                written = run_handwritten(spark, stream, messages, f"round{number}", first, 1)
                measured.append((run.seconds, written.seconds))
                print(f"round {number}: cdclake {run.seconds:.1f} s, hand-written {written.seconds:.1f} s", flush=True)
        finally:
            spark.stop()
    described = (f"`{format_name}` {json.dumps(dict(stream.options))} on {PARTITIONS} partitions, "
                 f"{stream.messages:,} messages of "
                 f"`WorkloadSpec(seed={stream.spec.seed}, tables={stream.spec.tables}, "
                 f"transactions={stream.spec.transactions})`, bench/replicate.py's stream; batches of at most "
                 f"{batch:,} records")
    return measured, described


def report(command: str, format_name: str, measured: list[tuple[float, float]], described: str,
           loads: tuple[str, str]) -> str:
    start, end = markers(format_name)
    rows = [f"| {number} | {ours:.1f} | {theirs:.1f} | {theirs / ours:.2f} |"
            for number, (ours, theirs) in enumerate(measured, 1)]
    return "\n".join([
        start,
        f"### Warm rounds, {format_name}: cdclake and the hand-written job alternated in one session",
        "",
        f"Command: `{command}`  ",
        f"Date: {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC  ",
        f"Machine: {machine()}; Spark `{MASTER}`, catalog `{CATALOG}`; load average {loads[0]} (1 min) at the "
        f"start, {loads[1]} at the end  ",
        f"Workload: {described}.",
        "",
        "| round | cdclake `Replicator.run(once=True)`, s | hand-written job, s | ÷ hand-written |",
        "| ---: | ---: | ---: | ---: |",
        *rows,
        "",
        "Each round replicates the whole stream into fresh tables, cdclake first, then the hand-written job; "
        "÷ hand-written is cdclake's rate over the hand-written job's in the same round. The first round is "
        "measured as bench/replicate.py measures (after the same warm-up of a few thousand messages, both jobs in "
        "a JVM still warming up); in the later ones both jobs run warm.",
        end,
    ])


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--format", default="canal-json", choices=sorted(handwritten.FORMATS))
    parser.add_argument("--events", type=int, default=1_000_000, help="row events, about (default 1000000)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cache", type=Path, default=cache_root(), help="where captured topics are kept")
    parser.add_argument("--output", type=Path, default=ROOT / "BENCHMARKS.md", help="markdown file to update")
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(argv)
    loads_start = load_average()
    measured, described = measure(args.format, args.events, args.rounds, args.cache)
    section = report(command_line("rounds.py", argv), args.format, measured, described, (loads_start, load_average()))
    publish(section, args.output, *markers(args.format), write=not args.no_write)


if __name__ == "__main__":
    main()
