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
    nice -n 19 python3 bench/soak.py --sink postgres --kills 30     # into a database started for it

With ``--sink postgres`` or ``--sink mariadb`` the job's tables and progress live in a server of
Debian's package started on loopback for the soak (tests/catalogs.py, as the tests start theirs), and
each sink has its own section of RELIABILITY.md.

It prints a section and writes it to RELIABILITY.md between its markers. Exit status 1 when a table
differs from the oracle, the changelog count is wrong, a run failed, or a process survived its run.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import datetime as dt
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the crash harness lives in tests/spark

from benchmarks_md import load_average, machine, write_section  # noqa: E402  (bench/ is on the path when a script here runs)

from cdclake.errors import CdclakeError  # noqa: E402
from cdclake.sinks import compare_tables, open_reader  # noqa: E402
from cdclake.sinks.iceberg.state import load_state  # noqa: E402
from cdclake.spark.killpoints import POINTS  # noqa: E402
from cdclake.workload import Workload, WorkloadSpec, produce  # noqa: E402
from tests.spark.crashing import KillAfter, Run, left_behind, run_replicate, state_version  # noqa: E402
from tests.spark.jobs import CASES, Job, changelog_count, lake_differences, row_changes, rows_compared  # noqa: E402
from tests.spark.streams import Partitions, write  # noqa: E402

SINKS = ("iceberg", "postgres", "mariadb")
QUOTE = {"postgres": '"', "mariadb": "`"}  # how each database quotes a name
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


def markers(sink: str) -> tuple[str, str]:
    """The section's markers in RELIABILITY.md: one section per sink."""
    name = "bench/soak.py" if sink == "iceberg" else f"bench/soak.py --sink {sink}"
    return f"<!-- {name}: start -->", f"<!-- {name}: end -->"


@contextlib.contextmanager
def database(sink: str) -> Iterator[str | None]:
    """The URL of a database server started for the soak, None for Iceberg tables."""
    if sink == "iceberg":
        yield None
        return
    from tests.catalogs import LocalMariaDB, LocalPostgres

    if sink == "postgres":
        with LocalPostgres() as postgres:
            yield f"{postgres.jdbc_url}?user={postgres.user}"
    else:
        with LocalMariaDB() as mariadb:
            yield mariadb.jdbc_url


def progress_mark(url: str | None, warehouse: Path, namespace: str) -> Callable[[], object]:
    """What changes when the job plans or commits a batch: the state table's versions in Iceberg, the
    state's batch and plan in a database (None before the job has made its tables)."""
    if url is None:
        return lambda: state_version(warehouse, namespace)

    def mark() -> object:
        try:
            state = open_reader(url, namespace).read_state()
        except CdclakeError:
            return None
        return state.batch, len(state.plan)
    return mark


def where_left(url: str | None, warehouse: Path, job: Job, mark: Callable[[], object]) -> str:
    """Where a random kill left the job: in Iceberg, between batches, planned or applying (tables show
    their steps); in a database, between batches or with a batch planned."""
    if url is None:
        return left_behind(warehouse, job.namespace, job.prefix)
    now = mark()
    return "a batch planned" if isinstance(now, tuple) and now[1] else "between batches"


def soak(args: argparse.Namespace, scratch: Path, url: str | None) -> tuple[Soak, Outcome]:
    format_name, options = CASES[args.format]
    # A database sink refuses text holding NUL (docs/sinks.md): its workload has none.
    workload = Workload(WorkloadSpec(seed=args.seed, transactions=args.transactions, tables=args.tables,
                                     rename_table=True, text_nul=url is None))
    stream = produce(workload, format_name, options, duplicates=args.duplicates, watermark_interval_ms=50)
    clean_changes = row_changes(produce(workload, format_name, options, watermark_interval_ms=50))
    warehouse, captured = scratch / "warehouse", scratch / "stream"
    job = Job("soak", format_name, options, max_records=args.batch_records)
    config = job.write_toml(scratch / "job.toml", captured, warehouse, sink=url)
    mark = progress_mark(url, warehouse, job.namespace)
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
            planned = mark()

            def batch_planned(planned: object = planned) -> bool:
                return mark() != planned

            run = run_replicate(config, log, kill_after=KillAfter(rng.uniform(0.0, args.max_delay), batch_planned))
            name = RANDOM_MOMENT
        else:
            name = rng.choice(POINTS)
            occurrence = rng.randint(1, TABLE_MERGES) if name == "table-merged" else 1
            run = run_replicate(config, log, kill_at=f"{name}:{occurrence}")
        _count(done, run, name, lambda: where_left(url, warehouse, job, mark))
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

    expected = workload.oracle().carried(format_name, stream.codec_options).tables
    if url is not None:
        return done, database_outcome(url, args.sink, job, expected, len(stream), clean_changes)

    from cdclake.spark.session import build_session  # Spark only now: the runs above have their own

    spark = build_session(master="local[2]", warehouse=warehouse, conf={"spark.ui.showConsoleProgress": "false"})
    spark.sparkContext.setLogLevel("ERROR")
    try:
        outcome = Outcome(len(stream), clean_changes, changelog_count(spark, job), len(expected),
                          rows_compared(expected), lake_differences(spark, job, expected),
                          spark.table(job.system_table("dead_letters")).count(),
                          load_state(spark, "lake", job.namespace)[0].batch)
    finally:
        spark.stop()
    return done, outcome


def database_outcome(url: str, sink: str, job: Job, expected: dict, messages: int, clean_changes: int) -> Outcome:
    """The database's tables against the oracle, read with the sink's own client (no Spark)."""
    compared = compare_tables(url, expected, lambda database, table: (f"{job.prefix}_{database}", table))
    differences = [(c.upstream, c.missing, c.unexpected, c.column_differences, c.examples)
                   for c in compared if not c.equal]
    reader = open_reader(url, job.namespace)
    quote = QUOTE[sink]

    def rows(table: str) -> int:
        return int(reader.table_status(f"{quote}{job.namespace}{quote}.{quote}{table}{quote}")["rows"])

    return Outcome(messages, clean_changes, rows("cdclake_changelog"), len(expected), rows_compared(expected),
                   differences, rows("cdclake_dead_letters"), reader.read_state().batch)


def _count(done: Soak, run: Run, name: str, where: Callable[[], str]) -> None:
    """``run`` counted; ``where`` tells where a random kill left the job."""
    done.runs += 1
    done.survivors += run.survivors
    if run.killed:
        done.kills[name] += 1
        if name == RANDOM_MOMENT:
            done.moments[where()] += 1
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
    start, end = markers(args.sink)
    into = "" if args.sink == "iceberg" else f", into {args.sink} (a server on loopback)"
    lines = [
        start,
        f"### Crash soak (bench/soak.py){into}",
        "",
        f"Command: `{command}`  ",
        f"Date: {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC; {done.runs} runs in {done.seconds / 60:.0f} min  ",
        f"Machine: {machine()}; each run `local[2]`; load average {loads[0]} (1 min) at the start, {loads[1]} at "
        "the end (the machine is shared)  ",
        f"Workload: `WorkloadSpec(seed={args.seed}, transactions={args.transactions}, tables={args.tables}, "
        f"rename_table=True{'' if args.sink == 'iceberg' else ', text_nul=False'})` in {args.format}, "
        f"{args.duplicates} re-sent ranges: {outcome.messages:,} "
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
    lines.append(end)
    return "\n".join(lines)


DEFAULTS: dict[str, object] = {"minutes": 0.0, "format": "simple", "sink": "iceberg", "transactions": 300,
                               "tables": 5, "seed": 17, "duplicates": 3, "batch_records": 60, "max_delay": 8.0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=100, help="runs killed (each restarted)")
    parser.add_argument("--format", choices=sorted(CASES), default=DEFAULTS["format"])
    parser.add_argument("--sink", choices=SINKS, default=DEFAULTS["sink"],
                        help="where the job's tables live: Iceberg, or a database server started for the soak")
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
        with database(args.sink) as url:
            done, outcome = soak(args, scratch, url)
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
        write_section(ROOT / "RELIABILITY.md", text, *markers(args.sink))
    sys.exit(0 if outcome.ok and not done.failures and not done.survivors else 1)


if __name__ == "__main__":
    main()
