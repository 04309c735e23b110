"""Memory of a backlog replication: does the job's memory grow with the backlog it catches up on?

For each ``--events`` size, the workload of bench/replicate.py (ten tables, transactions of 1 to 9 rows,
DDL mid-stream, eight partitions, Canal-JSON with the TiDB extension unless ``--format`` says otherwise;
generated once and cached as bench/replicate.py caches it) is replicated from its captured topic, as a
backlog, by ``cdclake replicate --once`` in a process of its own (tests/spark/crashing.py's harness), in
batches of at most ``--batch-records`` records, into a fresh warehouse. Meanwhile every ``--interval``
seconds the resident memory (VmRSS in /proc) of each of the run's processes is read, and with it each
one's high-water mark (VmHWM), which catches a peak between samples; the processes are told apart by
their command line:

* the driver: the Python process running ``cdclake replicate``;
* the JVM: Spark's driver and, in ``local[2]``, its executors (one process);
* the Python workers: PySpark's daemon and the workers it forks, which decode on the executors.

A fork of the JVM that has not yet executed its command (Hadoop's local file system runs ``chmod`` and
the like) shows the JVM's memory as its own and is left out. For each kind it reports the peak of the
summed resident memory over the samples (pages the daemon's forked workers share count once per worker),
and the largest high-water mark of one process. Memory that does not grow with the backlog is the same
at every size; the JVM's heap is capped by the ``spark.driver.memory`` session.py gives a local driver
(``LOCAL_DRIVER_MEMORY``) whatever the backlog, so its resident memory says only how much of the cap it
touched. What the JVM really holds is its heap after a full collection: every ``--full-gc-every``
seconds the script asks the JVM for one (``jcmd <pid> GC.run``), and the JVM logs each collection
(``-Xlog:gc``); the figures are the live heap after the first, the largest and the last of them. The
seconds per 1,000 changes applied say whether the cost per event stays flat as the backlog grows (issue
20's scale target: within ±20 % from 10⁵ to 10⁷ events): of the whole process, Spark's start included,
and of replicating alone (the run's own summary: from ``Replicator(...)`` to the end of its last batch),
which leaves out the ten-odd seconds of starting a JVM that any size pays once.
Run from the repository root::

    nice -n 19 python3 bench/backlog.py --events 100000 300000

It prints a section and writes it to RELIABILITY.md between its markers (``--no-write`` leaves it alone).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import uuid
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the process harness lives in tests/spark

from _stream import OPTIONS, PARTITIONS, cache_root, prepared_stream  # noqa: E402  (bench/ is on the path when a script here runs)
from benchmarks_md import load_average, machine, write_section  # noqa: E402

from cdclake.spark.session import LOCAL_DRIVER_MEMORY  # noqa: E402
from tests.spark.crashing import run_replicate  # noqa: E402
from tests.spark.jobs import Job  # noqa: E402

SECTION_START = "<!-- bench/backlog.py: start -->"
SECTION_END = "<!-- bench/backlog.py: end -->"
KINDS = ("driver", "JVM", "Python workers")
_MARK = "CDCLAKE_BACKLOG_RUN"


@dataclass
class Memory:
    """Peaks in KiB, per kind of process."""

    summed: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    largest: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    processes: dict[str, set[int]] = field(default_factory=lambda: defaultdict(set))
    each: dict[int, tuple[str, str, int]] = field(default_factory=dict)  # pid: kind, command, VmHWM
    samples: int = 0
    live_heap_mib: list[int] = field(default_factory=list)  # the JVM's heap after each full collection


def _command(pid: int) -> list[bytes]:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().split(b"\0")
    except OSError:
        return []


def _kind(pid: int, parent: int) -> tuple[str, str] | None:
    """The kind of a process of the run, and its command line in short; None for what is not one of
    them, and for a fork of the JVM on its way to run a command (Hadoop's local file system runs
    ``chmod`` and the like; Spark starts the PySpark daemon): until it executes the command it shows
    the JVM's command line and the JVM's memory as its own."""
    command = _command(pid)
    short = " ".join(part.decode(errors="replace") for part in command if part and not part.startswith(b"-"))[-150:]
    if command and command[0].endswith(b"java"):
        forked = (_command(parent) or [b""])[0].endswith(b"java")
        return None if forked else ("JVM", short)
    if any(b"pyspark.daemon" in part or b"pyspark.worker" in part for part in command):
        return "Python workers", short
    if any(b"cdclake.cli" in part for part in command):
        return "driver", short
    return None


def _status_kb(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM of a process, in KiB, and its parent (PPid); empty if it is gone."""
    try:
        lines = (Path("/proc") / str(pid) / "status").read_text().splitlines()
    except OSError:
        return {}
    return {name: int(rest.split()[0]) for name, _, rest in (line.partition(":") for line in lines)
            if name in ("VmRSS", "VmHWM", "PPid")}


def _marked(marker: str) -> list[int]:
    wanted = f"{_MARK}={marker}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if wanted in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _run_processes(marker: str) -> Iterator[tuple[int, str, str, dict[str, int]]]:
    """The run's processes of a kind in :data:`KINDS`: pid, kind, command line in short, and status."""
    for pid in _marked(marker):
        status = _status_kb(pid)
        described = _kind(pid, status["PPid"]) if status else None
        if described is not None:
            yield pid, *described, status


def sample(marker: str, memory: Memory, stop: threading.Event, interval: float) -> None:
    """Until ``stop``: the run's processes' resident memory, summed per kind, and each one's high-water
    mark, kept at their peaks."""
    while not stop.is_set():
        summed: dict[str, int] = dict.fromkeys(KINDS, 0)
        for pid, kind, command, status in _run_processes(marker):
            memory.processes[kind].add(pid)
            memory.each[pid] = (kind, command, max(status.get("VmHWM", 0), memory.each.get(pid, ("", "", 0))[2]))
            summed[kind] += status.get("VmRSS", 0)
            memory.largest[kind] = max(memory.largest[kind], status.get("VmHWM", 0))
        for kind in KINDS:
            memory.summed[kind] = max(memory.summed[kind], summed[kind])
        memory.samples += 1
        stop.wait(interval)


def collect_garbage(marker: str, stop: threading.Event, every: float) -> None:
    """Until ``stop``: every ``every`` seconds, a full collection in each JVM of the run, so that its
    GC log shows what the heap holds live."""
    while not stop.wait(every):
        for pid, kind, _, _ in _run_processes(marker):
            if kind == "JVM":
                subprocess.run(["jcmd", str(pid), "GC.run"], capture_output=True, timeout=120, check=False)


_FULL_GC = re.compile(r"Pause Full \(.*?\) \d+M->(\d+)M")


def live_heap(gc_log: Path) -> list[int]:
    """The heap after each full collection in a JVM's ``-Xlog:gc`` file, in MiB."""
    if not gc_log.exists():
        return []
    return [int(match.group(1)) for match in _FULL_GC.finditer(gc_log.read_text(errors="replace"))]


@dataclass
class Measured:
    events: int
    records: int
    applied: int
    batches: int
    seconds: float
    replicating: float  # the run's own seconds, Spark started: from Replicator(...) to its last batch's end
    memory: Memory


def measure(events: int, args: argparse.Namespace, scratch: Path) -> Measured:
    stream = prepared_stream(args.format, events, Path(args.cache))
    job = Job("backlog", args.format, OPTIONS[args.format], max_records=args.batch_records)
    warehouse = scratch / f"warehouse-{events}"
    gc_log = scratch / f"gc-{events}.log"
    config = job.write_toml(scratch / f"job-{events}.toml", stream.root, warehouse,
                            spark={"spark.driver.extraJavaOptions": f"-Xlog:gc:file={gc_log}"})
    marker = uuid.uuid4().hex
    memory, stop = Memory(), threading.Event()
    os.environ[_MARK] = marker  # the run inherits it, and its JVM and Python workers from it
    sampler = threading.Thread(target=sample, args=(marker, memory, stop, args.interval), daemon=True)
    collector = threading.Thread(target=collect_garbage, args=(marker, stop, args.full_gc_every), daemon=True)
    sampler.start()
    collector.start()
    try:
        run = run_replicate(config, scratch / f"replicate-{events}.log", timeout_s=args.timeout)
    finally:
        stop.set()
        sampler.join()
        collector.join()
        del os.environ[_MARK]
        memory.live_heap_mib = live_heap(gc_log)
    if run.returncode != 0:
        raise SystemExit(f"cdclake replicate exited {run.returncode} after {run.seconds:.0f} s ({_peaks(memory)}):"
                         f"\n{run.log}")
    summary = re.search(r"(\d+) batch(?:es)?: (\d+) records? read, (\d+) changes? applied, .* in ([0-9.]+) s \(",
                        run.log)
    if summary is None:
        raise SystemExit(f"no summary in the run's log:\n{run.log}")
    batches, records, applied = (int(group) for group in summary.groups()[:3])
    replicating = float(summary.group(4))
    # Printed as each size ends: a later size that fails must not take this one's figures with it.
    print(f"{events:,} events: {batches} batches in {run.seconds:.0f} s; {_peaks(memory)}", flush=True)
    return Measured(events, records, applied, batches, run.seconds, replicating, memory)


def _peaks(memory: Memory) -> str:
    """The peaks so far, as "kind summed/largest MiB", and the JVM's live heap."""
    return ("; ".join(f"{kind} {_mib(memory.summed[kind])}/{_mib(memory.largest[kind])} MiB" for kind in KINDS)
            + f"; JVM heap after full GC {_live(memory)} MiB; each: {memory.live_heap_mib}")


def _live(memory: Memory) -> str:
    """The JVM's heap after its first, largest and last full collection."""
    heap = memory.live_heap_mib
    return f"{heap[0]:,} / {max(heap):,} / {heap[-1]:,} ({len(heap)} collections)" if heap else "-"


def _mib(kib: int) -> str:
    return f"{kib / 1024:,.0f}"


def section(args: argparse.Namespace, runs: list[Measured], loads: tuple[str, str]) -> str:
    lines = [
        SECTION_START,
        "### Memory of a backlog (bench/backlog.py)",
        "",
        f"Command: `nice -n 19 python3 bench/backlog.py --events {' '.join(str(e) for e in args.events)}"
        + (f" --format {args.format}" if args.format != "canal-json" else "")
        + (f" --batch-records {args.batch_records}" if args.batch_records != 50_000 else "") + "`  ",
        f"Date: {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC  ",
        f"Machine: {machine()}; `cdclake replicate --once` with `local[2]` and the driver memory session.py "
        f"gives a local driver (the JVM's heap capped at `-Xmx{LOCAL_DRIVER_MEMORY}`); "
        f"load average {loads[0]} (1 min) at the start, {loads[1]} at the end  ",
        f"Workload: bench/replicate.py's, in {args.format} on {PARTITIONS} partitions, replicated from its "
        f"captured topic in batches of at most {args.batch_records:,} records; resident memory sampled every "
        f"{args.interval} s from /proc; a full collection of the JVM's heap every {args.full_gc_every:g} s",
        "",
        "| backlog events | records read | changes applied | batches | seconds | s per 1,000 changes "
        "| replicating: seconds (s per 1,000 changes) | " + " | ".join(
            f"{kind} peak MiB (summed / largest one)" for kind in KINDS)
        + " | JVM heap after full GC, MiB (first / largest / last) |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | " + " | ".join("---:" for _ in KINDS) + " | ---: |",
    ]
    for run in runs:
        cells = [f"{_mib(run.memory.summed[k])} / {_mib(run.memory.largest[k])} ({len(run.memory.processes[k])} "
                 f"process{'es' if len(run.memory.processes[k]) != 1 else ''})" for k in KINDS]
        per_thousand = run.seconds / max(run.applied, 1) * 1000  # the cost per event, flat if the job scales
        replicating = run.replicating / max(run.applied, 1) * 1000  # the same without Spark's start
        lines.append(f"| {run.events:,} | {run.records:,} | {run.applied:,} | {run.batches} | {run.seconds:.0f} | "
                     f"{per_thousand:.3f} | {run.replicating:.0f} ({replicating:.3f}) | " + " | ".join(cells)
                     + f" | {_live(run.memory)} |")
    lines.append(SECTION_END)
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, nargs="+", default=[100_000, 300_000])
    parser.add_argument("--format", choices=sorted(OPTIONS), default="canal-json")
    parser.add_argument("--batch-records", type=int, default=50_000)
    parser.add_argument("--interval", type=float, default=0.25)
    parser.add_argument("--full-gc-every", type=float, default=60.0, help="seconds between forced full GCs")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds one run may take")
    parser.add_argument("--cache", default=str(cache_root()), help="where captured topics are kept")
    parser.add_argument("--no-write", action="store_true", help="print the section, leave RELIABILITY.md alone")
    args = parser.parse_args()
    start_load = load_average()
    scratch = Path(tempfile.mkdtemp(prefix="cdclake-backlog-"))
    try:
        runs = [measure(events, args, scratch) for events in args.events]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    text = section(args, runs, (start_load, load_average()))
    for run in runs:
        print(f"{run.events:,} events, each process's high-water mark:")
        for pid, (kind, command, hwm) in sorted(run.memory.each.items()):
            print(f"  {pid} {kind}: {_mib(hwm)} MiB  {command}")
    print(text)
    if not args.no_write:
        write_section(ROOT / "RELIABILITY.md", text, SECTION_START, SECTION_END)


if __name__ == "__main__":
    main()
