"""The crash soak: ``cdclake replicate`` killed with SIGKILL over and over, at random named points of a batch
and at random moments, restarted each time over one growing stream, and at the end every table compared
with the upstream simulator's oracle and the changelog counted.

tests/spark/test_crash.py kills the job once at each named point; this runs the same harness
(tests/spark/crashing.py: each run a process of its own with its own JVM, as in production) as many
times as asked, over a longer workload:

* The workload's stream (``--format``, with ``--duplicates`` re-sent ranges, as TiCDC's at-least-once
  producer sends them) is cut into ``--kills`` + 1 slices per partition; before each run the next slice
  is appended to the captured topic, as a producer keeps writing to Kafka, so that every run has
  batches to die in. ``--minutes`` bounds the time spent killing: once it has passed, no more runs are
  killed and the slices left are appended before the last run.
* Each run dies either at a named kill point (:mod:`cdclake.spark.killpoints`, one drawn at random,
  the first time the run reaches it; ``table-merged`` after one of the first four MERGEs) or, one run
  in three, by SIGKILL to its whole process group at a random moment (0 to ``--max-delay`` seconds)
  after it plans its first batch: while reading, decoding, applying or committing.
* A run that ends without dying (its point was not reached: no DDL in its batches, say) counts as such
  and is not a kill survived.
* Whatever of a run outlives it (a JVM, a PySpark daemon) is a survivor, reported and ended.
* After the last kill, the rest of the stream is appended and one run goes to the end. Then, in a
  Spark session of this process, every lake table is compared with the oracle, row for row and column
  for column, and the changelog must hold every change of the clean stream exactly once.

Run from the repository root (long: each run starts a JVM; use nice on a shared machine)::

    nice -n 19 python3 bench/soak.py --kills 60 --minutes 40
    python3 bench/soak.py --kills 5 --transactions 60 --no-write   # a quick look, RELIABILITY.md untouched

It prints a section and writes it to RELIABILITY.md between its markers. Exit status 1 when a table
differs from the oracle, the changelog count is wrong, a run failed, or a process survived its run.
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import random
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the crash harness lives in tests/spark

from benchmarks_md import load_average, machine, write_section  # noqa: E402  (bench/ is on the path when a script here runs)

from cdclake.sinks.iceberg.state import load_state  # noqa: E402
from cdclake.spark.killpoints import POINTS  # noqa: E402
from cdclake.workload import Workload, WorkloadSpec, produce  # noqa: E402
from tests.spark.crashing import KillAfter, Run, left_behind, run_replicate, state_version  # noqa: E402
from tests.spark.jobs import CASES, Job, changelog_count, lake_differences, row_changes, rows_compared  # noqa: E402
from tests.spark.streams import Partitions, write  # noqa: E402

SECTION_START = "<!-- bench/soak.py: start -->"
SECTION_END = "<!-- bench/soak.py: end -->"
RANDOM_MOMENT = "random moment"
TABLE_MERGES = 4  # table-merged kills at one of a batch's first MERGEs (every other point at its first time)


@dataclass
class Soak:
    """What the runs did."""

    kills: collections.Counter[str] = field(default_factory=collections.Counter)
    moments: collections.Counter[str] = field(default_factory=collections.Counter)  # where a random kill left it
    not_reached: collections.Counter[str] = field(default_factory=collections.Counter)
    failures: list[str] = field(default_factory=list)
    survivors: list[str] = field(default_factory=list)
    runs: int = 0
    seconds: float = 0.0


def sliced(partitions: Partitions, slices: int) -> list[Partitions]:
    """Each partition's messages cut into ``slices`` consecutive pieces, piece ``i`` of every partition
    together: what a producer has written by the time of run ``i``."""
    pieces: list[Partitions] = [{} for _ in range(slices)]
    for partition, messages in partitions.items():
        for index in range(slices):
            pieces[index][partition] = messages[len(messages) * index // slices:len(messages) * (index + 1) // slices]
    return pieces


@dataclass
class Outcome:
    """What the lake holds after the last run, against the oracle and the clean stream."""

    messages: int
    clean_changes: int
    changelog: int
    tables: int
    rows: int
    differences: list[tuple[object, ...]]
    dead_letters: int
    batches: int

    @property
    def ok(self) -> bool:
        return not self.differences and self.changelog == self.clean_changes


def soak(args: argparse.Namespace, scratch: Path) -> tuple[Soak, Outcome]:
    format_name, options = CASES[args.format]
    workload = Workload(WorkloadSpec(seed=args.seed, transactions=args.transactions, tables=args.tables,
                                     rename_table=True))
    stream = produce(workload, format_name, options, duplicates=args.duplicates, watermark_interval_ms=50)
    clean_changes = row_changes(produce(workload, format_name, options, watermark_interval_ms=50))
    warehouse, captured = scratch / "warehouse", scratch / "stream"
    job = Job("soak", format_name, options, max_records=args.batch_records)
    config = job.write_toml(scratch / "job.toml", captured, warehouse)
    log = scratch / "replicate.log"
    rng = random.Random(args.seed)
    slices = sliced(stream.partitions, args.kills + 1)
    done = Soak()
    started = time.monotonic()
    deadline = started + args.minutes * 60 if args.minutes else None
    appended = 0
    for number in range(args.kills):
        if deadline is not None and time.monotonic() > deadline:
            print(f"--minutes {args.minutes:g} passed: {number} of {args.kills} runs made", flush=True)
            break
        write(captured, stream.topic, slices[number])
        appended += 1
        if rng.random() < 1 / 3:
            planned = state_version(warehouse, job.namespace)

            def batch_planned(planned: int = planned) -> bool:
                return state_version(warehouse, job.namespace) > planned

            run = run_replicate(config, log, kill_after=KillAfter(rng.uniform(0.0, args.max_delay), batch_planned))
            name = RANDOM_MOMENT
        else:
            name = rng.choice(POINTS)
            occurrence = rng.randint(1, TABLE_MERGES) if name == "table-merged" else 1
            run = run_replicate(config, log, kill_at=f"{name}:{occurrence}")
        _count(done, run, name, warehouse, job)
        print(f"run {number + 1}/{args.kills}: {run.kill} -> {'killed' if run.killed else run.returncode} "
              f"in {run.seconds:.0f} s", flush=True)
    for rest in slices[appended:]:
        write(captured, stream.topic, rest)
    last = run_replicate(config, log)
    done.runs += 1
    if last.returncode != 0:
        done.failures.append(f"the last run: exit {last.returncode}\n{last.log}")
    done.survivors += last.survivors
    done.seconds = time.monotonic() - started

    from cdclake.spark.session import build_session  # Spark only now: the runs above have their own

    spark = build_session(master="local[2]", warehouse=warehouse, conf={"spark.ui.showConsoleProgress": "false"})
    spark.sparkContext.setLogLevel("ERROR")
    try:
        expected = workload.oracle().carried(format_name, stream.codec_options).tables
        outcome = Outcome(len(stream), clean_changes, changelog_count(spark, job), len(expected),
                          rows_compared(expected), lake_differences(spark, job, expected),
                          spark.table(job.system_table("dead_letters")).count(),
                          load_state(spark, "lake", job.namespace)[0].batch)
    finally:
        spark.stop()
    return done, outcome


def _count(done: Soak, run: Run, name: str, warehouse: Path, job: Job) -> None:
    done.runs += 1
    done.survivors += run.survivors
    if run.killed:
        done.kills[name] += 1
        if name == RANDOM_MOMENT:
            done.moments[left_behind(warehouse, job.namespace, job.prefix)] += 1
    elif run.returncode == 0:
        done.not_reached[name] += 1
    else:
        done.failures.append(f"{run.kill}: exit {run.returncode}\n{run.log}")


def section(args: argparse.Namespace, done: Soak, outcome: Outcome, loads: tuple[str, str]) -> str:
    killed = sum(done.kills.values())
    command = f"nice -n 19 python3 bench/soak.py --kills {args.kills}" + "".join(
        f" --{name.replace('_', '-')} {getattr(args, name):g}" if isinstance(default, float) else
        f" --{name.replace('_', '-')} {getattr(args, name)}" for name, default in DEFAULTS.items()
        if getattr(args, name) != default)
    lines = [
        SECTION_START,
        "### Crash soak (bench/soak.py)",
        "",
        f"Command: `{command}`  ",
        f"Date: {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC; {done.runs} runs in {done.seconds / 60:.0f} min  ",
        f"Machine: {machine()}; each run `local[2]`; load average {loads[0]} (1 min) at the start, {loads[1]} at "
        "the end (the machine is shared)  ",
        f"Workload: `WorkloadSpec(seed={args.seed}, transactions={args.transactions}, tables={args.tables}, "
        f"rename_table=True)` in {args.format}, {args.duplicates} re-sent ranges: {outcome.messages:,} "
        f"messages on 4 partitions, cut in {args.kills + 1} slices, one appended before each run (what is left before "
        f"the last); batches of at most "
        f"{args.batch_records} records, {outcome.batches} batches committed",
        "",
        "| killed at | runs killed | runs that ended before reaching it |",
        "| --- | ---: | ---: |",
    ]
    for name in (*POINTS, RANDOM_MOMENT):
        lines.append(f"| {name} | {done.kills[name]} | {done.not_reached[name]} |")
    moments = ", ".join(f"{count} {where}" for where, count in sorted(done.moments.items())) or "none"
    lost = "0" if not outcome.differences else "**see the differences below**"
    lines += [
        "",
        f"- **Kills survived: {killed}** ({done.kills[RANDOM_MOMENT]} at a random moment, which left the job: "
        f"{moments}); runs that failed otherwise: {len(done.failures)}; processes outliving their run: "
        f"{len(done.survivors)}",
        f"- Tables equal to the oracle: {outcome.tables - len(outcome.differences)} of {outcome.tables} "
        f"({outcome.rows:,} upstream rows compared); rows lost: {lost}",
        f"- Changelog: {outcome.changelog:,} entries for {outcome.clean_changes:,} changes of the clean "
        f"stream (each once: {'yes' if outcome.changelog == outcome.clean_changes else '**no**'}); dead letters: "
        f"{outcome.dead_letters}",
    ]
    lines += [f"- difference: `{difference}`" for difference in outcome.differences]
    lines.append(SECTION_END)
    return "\n".join(lines)


DEFAULTS: dict[str, object] = {"minutes": 0.0, "format": "simple", "transactions": 300, "tables": 5, "seed": 17,
                               "duplicates": 3, "batch_records": 60, "max_delay": 8.0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=100, help="runs killed (each restarted)")
    parser.add_argument("--format", choices=sorted(CASES), default=DEFAULTS["format"])
    for name in ("transactions", "tables", "seed", "duplicates", "batch_records"):
        parser.add_argument(f"--{name.replace('_', '-')}", type=int, default=DEFAULTS[name])
    parser.add_argument("--max-delay", type=float, default=DEFAULTS["max_delay"],
                        help="the latest a random-moment kill comes, in seconds after the run plans a batch")
    parser.add_argument("--minutes", type=float, default=0.0,
                        help="make no more kills once this many minutes have passed (0: no bound)")
    parser.add_argument("--no-write", action="store_true", help="print the section, leave RELIABILITY.md alone")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory (warehouse, logs)")
    args = parser.parse_args()
    start_load = load_average()
    scratch = Path(tempfile.mkdtemp(prefix="cdclake-soak-"))
    try:
        done, outcome = soak(args, scratch)
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)
        else:
            print(f"kept {scratch}")
    text = section(args, done, outcome, (start_load, load_average()))
    print(text)
    for failure in done.failures:
        print(failure, file=sys.stderr)
    for survivor in done.survivors:
        print(f"survivor: {survivor}", file=sys.stderr)
    if not args.no_write:
        write_section(ROOT / "RELIABILITY.md", text, SECTION_START, SECTION_END)
    sys.exit(0 if outcome.ok and not done.failures and not done.survivors else 1)


if __name__ == "__main__":
    main()
